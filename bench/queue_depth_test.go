package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// depthJob is the baseline's element, comparable to what the in-memory queue keeps of a job:
// an ID, a payload and an enqueue time.
type depthJob struct {
	id      string
	payload []byte
	at      time.Time
}

// BenchmarkQueueDepth measures the cost of one job through a queue that already holds depth
// jobs: each op enqueues a job and takes one out (Receive and Ack on the in-memory backend),
// so the depth stays where it is. The baseline sends and receives a depthJob on a buffered
// channel that holds depth of them. The cost must stay flat as the queue deepens.
func BenchmarkQueueDepth(b *testing.B) {
	for _, depth := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			b.Run("corral", func(b *testing.B) {
				ctx := context.Background()
				m := memory.New()
				q, err := queue.New[[]byte](context.Background(), queue.WithBackend(m))
				if err != nil {
					b.Fatal(err)
				}
				for range depth {
					if _, err := q.Enqueue(ctx, queuePayload); err != nil {
						b.Fatal(err)
					}
				}
				var d driver.Delivery
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := q.Enqueue(ctx, queuePayload); err != nil {
						b.Fatal(err)
					}
					if err := m.Receive(ctx, time.Minute, &d); err != nil {
						b.Fatal(err)
					}
					if err := m.Ack(ctx, &d); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("baseline", func(b *testing.B) {
				ch := make(chan depthJob, depth+1)
				for i := range depth {
					ch <- depthJob{id: fmt.Sprint(i), payload: queuePayload, at: time.Now()}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					ch <- depthJob{id: "x", payload: queuePayload, at: time.Now()}
					if j := <-ch; len(j.payload) == 0 {
						b.Fatal("empty payload")
					}
				}
			})
		})
	}
}
