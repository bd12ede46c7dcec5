package queue

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Found in review: with the ack taking the next job, that job's lease ran,
// unrenewed, while a slow OnSuccess hook ran; it expired, another worker
// handled the job, and then this worker handled it again. Every job must be
// handled exactly once.
func TestConsumerSlowOnSuccessNoDoubleHandling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var first atomic.Bool
		q, err := New[int](context.Background(), WithHooks(Hooks{
			OnSuccess: func(context.Context, Event) {
				if first.CompareAndSwap(false, true) {
					time.Sleep(time.Second) // ten leases
				}
			},
		}))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		runs := map[int]int{}
		c, err := q.Consume(ctx, func(ctx context.Context, j Job[int]) error {
			mu.Lock()
			runs[j.Payload]++
			mu.Unlock()
			return nil
		}, WithWorkers(2), WithLease(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := q.Enqueue(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(5 * time.Second)
		if _, err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for p := range 2 {
			if runs[p] != 1 {
				t.Errorf("job %d handled %d times, want 1", p, runs[p])
			}
		}
	})
}
