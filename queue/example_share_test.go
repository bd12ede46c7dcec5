package queue_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/corral-go/corral/queue"
)

// Two queues share one worker budget: the user-facing queue gets six turns
// for each of the backfill's while both have work, and the backfill never
// holds more than one of the four workers.
func ExampleShare() {
	ctx := context.Background()
	users, _ := queue.New[string](ctx)
	defer users.Close(ctx)
	backfill, _ := queue.New[int](ctx)
	defer backfill.Close(ctx)
	for i := range 12 {
		_, _ = users.Enqueue(ctx, fmt.Sprint("request ", i))
		_, _ = backfill.Enqueue(ctx, i)
	}

	var wg sync.WaitGroup
	wg.Add(24)
	sh := queue.NewShare(4, queue.Weighted)
	cu, _ := users.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		defer wg.Done()
		return nil // serve the request
	}, queue.WithShare(sh, "users", 6))
	cb, _ := backfill.Consume(ctx, func(ctx context.Context, j queue.Job[int]) error {
		defer wg.Done()
		return nil // copy row j.Payload
	}, queue.WithShare(sh, "backfill", 1), queue.WithWorkers(1))
	wg.Wait()

	st, _ := sh.Stats(ctx)
	for _, s := range st {
		fmt.Printf("%s: weight %d, at most %d at once, %d jobs\n", s.Name, s.Weight, s.Cap, s.Turns)
	}
	_, _ = cu.Drain(ctx)
	_, _ = cb.Drain(ctx)
	// Output:
	// users: weight 6, at most 4 at once, 12 jobs
	// backfill: weight 1, at most 1 at once, 12 jobs
}
