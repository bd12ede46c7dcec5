package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/brokertest"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
)

// BenchmarkQueueJetStream publishes b.N small jobs (from 8 producers, each waiting for the
// broker's ack of every publish, with the job ID as Nats-Msg-Id) and handles them on 8 workers
// that ack each job and wait for the broker's confirmation, with memory storage, on a server
// of its own for each side (embedded, or see benchJetStream). The clock runs from the first
// publish to the last job handled: the bare client's last ack, corral's last handler's
// return, which the queue then acks (up to 8 acks outside the clock).
func BenchmarkQueueJetStream(b *testing.B) {
	for _, rig := range jetStreamRigs {
		b.Run(rig.name, func(b *testing.B) {
			b.ReportAllocs()
			r := rig.new(b)
			handled := r.handle(int64(b.N))
			b.ResetTimer()
			benchProduce(b, r.enqueue)
			<-handled
			b.StopTimer()
		})
	}
}

// BenchmarkQueueJetStreamPhases is BenchmarkQueueJetStream one phase after the other, to show
// where its time goes: the 8 producers publish b.N jobs, then the 8 workers handle them. It
// reports each phase's time a job (enqueue-µs, handle-µs) and, where the OS reports it, the
// process's CPU time a job while the workers handle (handle-cpu-µs: the client's, and the
// server's when it is the embedded one). The handling phase includes starting the workers.
func BenchmarkQueueJetStreamPhases(b *testing.B) {
	for _, rig := range jetStreamRigs {
		b.Run(rig.name, func(b *testing.B) {
			r := rig.new(b)
			n := float64(b.N)
			b.ResetTimer()
			start := time.Now()
			benchProduce(b, r.enqueue)
			enqueued := time.Now()
			cpu, cpuOK := processCPU()
			<-r.handle(int64(b.N))
			b.ReportMetric(float64(time.Since(enqueued).Microseconds())/n, "handle-µs")
			if end, ok := processCPU(); ok && cpuOK {
				b.ReportMetric(float64((end-cpu).Microseconds())/n, "handle-cpu-µs")
			}
			b.ReportMetric(float64(enqueued.Sub(start).Microseconds())/n, "enqueue-µs")
			b.StopTimer()
		})
	}
}

// jetStreamRig is one side of the JetStream benchmarks, on a server of its own.
type jetStreamRig struct {
	enqueue func(i int) error // publishes job i, and waits for the broker's ack
	// handle starts the workers, which handle jobs until they have handled n, and returns a
	// channel closed then. The workers stop when the benchmark ends.
	handle func(n int64) <-chan struct{}
}

// jetStreamRigs are the two sides: corral's queue and the bare nats.go client.
var jetStreamRigs = []struct {
	name string
	new  func(b *testing.B) jetStreamRig
}{
	{"corral", corralJetStream},
	{"baseline", bareJetStream},
}

// corralJetStream is corral's queue/jetstream, with a prefetch of two jobs a worker.
func corralJetStream(b *testing.B) jetStreamRig {
	ctx := context.Background()
	js := benchJetStream(b)
	be := jetstream.New(js, "bench", jetstream.WithMemoryStorage(), jetstream.WithPrefetch(2*queueWorkers))
	q, err := queue.New[[]byte](ctx, queue.WithBackend(be), queue.WithDedupHorizon(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { // closes be too; after the consumer's Close below
		if err := q.Close(ctx); err != nil {
			b.Error(err)
		}
	})
	return jetStreamRig{
		enqueue: func(i int) error {
			_, err := q.Enqueue(ctx, queuePayload, queue.WithID(strconv.Itoa(i)))
			return err
		},
		handle: func(total int64) <-chan struct{} {
			handler, done := countJobs(total)
			c, err := q.Consume(ctx, handler, queue.WithWorkers(queueWorkers))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				if _, err := c.Close(ctx); err != nil {
					b.Error(err)
				}
			})
			return done
		},
	}
}

// bareJetStream is the bare nats.go client: a work-queue stream, and a durable pull consumer
// whose messages 8 goroutines take, with a prefetch of two messages a goroutine.
func bareJetStream(b *testing.B) jetStreamRig {
	ctx := context.Background()
	js := benchJetStream(b)
	st, err := js.CreateStream(ctx, natsjs.StreamConfig{
		Name: "BASELINE", Subjects: []string{"baseline.>"}, Retention: natsjs.WorkQueuePolicy,
		Storage: natsjs.MemoryStorage, Duplicates: time.Minute,
	})
	if err != nil {
		b.Fatal(err)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, natsjs.ConsumerConfig{
		Durable: "w", AckPolicy: natsjs.AckExplicitPolicy, AckWait: 30 * time.Second,
	})
	if err != nil {
		b.Fatal(err)
	}
	return jetStreamRig{
		enqueue: func(i int) error {
			_, err := js.Publish(ctx, "baseline.job", queuePayload, natsjs.WithMsgID(strconv.Itoa(i)))
			return err
		},
		handle: func(total int64) <-chan struct{} {
			it, err := cons.Messages(natsjs.PullMaxMessages(2 * queueWorkers))
			if err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			done := make(chan struct{})
			var wg sync.WaitGroup
			for range queueWorkers {
				wg.Go(func() {
					for {
						m, err := it.Next()
						if err != nil {
							return // iterator stopped
						}
						if len(m.Data()) == 0 {
							panic("empty payload")
						}
						if err := m.DoubleAck(ctx); err != nil {
							panic(err)
						}
						if n.Add(1) == total {
							close(done)
						}
					}
				})
			}
			b.Cleanup(func() { it.Stop(); wg.Wait() })
			return done
		},
	}
}

// benchProduce calls publish(i) for i in [0, b.N) from queueWorkers goroutines.
func benchProduce(b *testing.B, publish func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, queueWorkers)
	for range queueWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := publish(i); err != nil {
					errs <- fmt.Errorf("publish %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// benchJetStream starts a JetStream server, shut down when b ends, and returns a client on it:
// an embedded one (the nats-server of this module's go.mod), or, when CORRAL_NATS_SERVER names
// a nats-server binary, a process of it on a random loopback port, so that the rows can be
// measured on another server version.
func benchJetStream(b *testing.B) natsjs.JetStream {
	b.Helper()
	url := benchNATSServer(b)
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	return js
}

// benchNATSServer starts the server of benchJetStream and returns its URL.
func benchNATSServer(b *testing.B) string {
	if os.Getenv("CORRAL_NATS_SERVER") != "" {
		return brokertest.StartNATSFor(b)
	}
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: b.TempDir(),
	})
	if err != nil {
		b.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		b.Fatal("nats server not ready")
	}
	b.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv.ClientURL()
}
