package queue_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/corral-go/corral/queue"
)

// A consumer calling a partner's API limited to 5 calls per 100ms: 10 jobs
// take two windows, however many workers it has.
func ExampleWithRateLimit() {
	ctx := context.Background()
	q, _ := queue.New[int](ctx)
	defer q.Close(ctx)
	for i := range 10 {
		_, _ = q.Enqueue(ctx, i)
	}
	var (
		mu     sync.Mutex
		starts []time.Time
		wg     sync.WaitGroup
	)
	wg.Add(10)
	c, _ := q.Consume(ctx, func(ctx context.Context, j queue.Job[int]) error {
		defer wg.Done()
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil // call the partner's API
	}, queue.WithWorkers(8), queue.WithRateLimit(5, 100*time.Millisecond))
	wg.Wait()
	_, _ = c.Drain(ctx)
	fmt.Println("the sixth start waited for the window:", starts[5].Sub(starts[0]) >= 100*time.Millisecond)
	// Output:
	// the sixth start waited for the window: true
}
