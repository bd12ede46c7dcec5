package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/corral-go/corral/queue"
)

// Every queue benchmark enqueues b.N small jobs from one producer into a
// queue bounded at 1,024 and handles them on 8 workers, each acking.
const (
	queueWorkers  = 8
	queueCapacity = 1024
)

var queuePayload = []byte("a small payload")

func BenchmarkQueueInMemory(b *testing.B) {
	b.Run("corral", func(b *testing.B) { benchQueueInMemory(b) })
	// With the Wait, Run and EndToEnd histograms of Stats recorded (issue 30).
	b.Run("corral-timed", func(b *testing.B) { benchQueueInMemory(b, queue.WithTimings()) })

	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		ch := make(chan []byte, queueCapacity)
		var wg sync.WaitGroup
		var n atomic.Int64
		for range queueWorkers {
			wg.Go(func() {
				for p := range ch {
					if len(p) == 0 {
						panic("empty payload")
					}
					n.Add(1)
				}
			})
		}
		b.ResetTimer()
		for range b.N {
			ch <- queuePayload
		}
		close(ch)
		wg.Wait()
		b.StopTimer()
		if n.Load() != int64(b.N) {
			b.Fatalf("handled %d of %d", n.Load(), b.N)
		}
	})

	b.Run("watermill", func(b *testing.B) {
		b.ReportAllocs()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ps := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: queueCapacity}, watermill.NopLogger{})
		msgs, err := ps.Subscribe(ctx, "jobs")
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		var n atomic.Int64
		done := make(chan struct{})
		total := int64(b.N)
		for range queueWorkers {
			wg.Go(func() {
				for m := range msgs {
					if len(m.Payload) == 0 {
						panic("empty payload")
					}
					m.Ack()
					if n.Add(1) == total {
						close(done)
					}
				}
			})
		}
		b.ResetTimer()
		for range b.N {
			if err := ps.Publish("jobs", message.NewMessage(watermill.NewUUID(), queuePayload)); err != nil {
				b.Fatal(err)
			}
		}
		<-done
		b.StopTimer()
		if err := ps.Close(); err != nil {
			b.Fatal(err)
		}
		wg.Wait()
	})
}

// countJobs returns a handler of the benchmarks' jobs, which panics on an empty payload, and a
// channel it closes once it has handled total jobs.
func countJobs(total int64) (func(context.Context, queue.Job[[]byte]) error, <-chan struct{}) {
	var n atomic.Int64
	done := make(chan struct{})
	return func(ctx context.Context, j queue.Job[[]byte]) error {
		if len(j.Payload) == 0 {
			panic("empty payload")
		}
		if n.Add(1) == total {
			close(done)
		}
		return nil
	}, done
}

// benchQueueInMemory enqueues b.N jobs into an in-memory queue made with
// opts, handled by queueWorkers workers.
func benchQueueInMemory(b *testing.B, opts ...queue.Option) {
	b.ReportAllocs()
	ctx := context.Background()
	q, err := queue.New[[]byte](context.Background(), append(opts, queue.WithCapacity(queueCapacity))...)
	if err != nil {
		b.Fatal(err)
	}
	handler, done := countJobs(int64(b.N))
	c, err := q.Consume(ctx, handler, queue.WithWorkers(queueWorkers))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := q.Enqueue(ctx, queuePayload); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	b.StopTimer()
	if _, err := c.Close(ctx); err != nil {
		b.Fatal(err)
	}
}
