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
// that ack each job and wait for the broker's confirmation, on one embedded server with memory
// storage. The clock runs from the first publish to the last ack.
func BenchmarkQueueJetStream(b *testing.B) {
	b.Run("corral", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		js := benchJetStream(b)
		be := jetstream.New(js, "bench", jetstream.WithMemoryStorage(), jetstream.WithPrefetch(2*queueWorkers))
		q, err := queue.New[[]byte](context.Background(), queue.WithBackend(be), queue.WithDedupHorizon(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close(ctx) // closes be too
		var n atomic.Int64
		done := make(chan struct{})
		total := int64(b.N)
		c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[[]byte]) error {
			if len(j.Payload) == 0 {
				panic("empty payload")
			}
			if n.Add(1) == total {
				close(done)
			}
			return nil
		}, queue.WithWorkers(queueWorkers))
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		benchProduce(b, func(i int) error {
			_, err := q.Enqueue(ctx, queuePayload, queue.WithID(strconv.Itoa(i)))
			return err
		})
		<-done
		b.StopTimer()
		if _, err := c.Close(ctx); err != nil {
			b.Fatal(err)
		}
	})

	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
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
		it, err := cons.Messages(natsjs.PullMaxMessages(2 * queueWorkers))
		if err != nil {
			b.Fatal(err)
		}
		var n atomic.Int64
		done := make(chan struct{})
		total := int64(b.N)
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
		b.ResetTimer()
		benchProduce(b, func(i int) error {
			_, err := js.Publish(ctx, "baseline.job", queuePayload, natsjs.WithMsgID(strconv.Itoa(i)))
			return err
		})
		<-done
		b.StopTimer()
		it.Stop()
		wg.Wait()
	})
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
