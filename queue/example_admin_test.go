package queue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-go/corral/queue"
)

// An operator lists the jobs waiting, a page at a time, inspects one and
// cancels it: a waiting job goes to the dead letters with ReasonCanceled,
// where RedriveAll can bring it back.
func ExampleQueue_Jobs() {
	ctx := context.Background()
	q, _ := queue.New[string](ctx)
	defer q.Close(ctx)
	for _, id := range []string{"mail-1", "mail-2", "mail-3"} {
		_, _ = q.Enqueue(ctx, "hello", queue.WithID(id), queue.WithDelay(time.Hour))
	}
	f := queue.Filter{State: queue.StateDelayed, Limit: 2}
	for {
		page, err := q.Jobs(ctx, f)
		if err != nil {
			panic(err)
		}
		for _, j := range page.Jobs {
			fmt.Println(j.Job.ID, j.State)
		}
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	if err := q.Cancel(ctx, "mail-2"); err != nil {
		panic(err)
	}
	ji, _ := q.Inspect(ctx, "mail-2")
	fmt.Println(ji.Job.ID, ji.State, ji.Reason)
	n, _ := q.RedriveAll(ctx, queue.Filter{Reason: queue.ReasonCanceled})
	fmt.Println("redriven:", n)
	_, err := q.Inspect(ctx, "mail-9")
	fmt.Println(errors.Is(err, queue.ErrNoJob))
	// Output:
	// mail-1 delayed
	// mail-2 delayed
	// mail-3 delayed
	// mail-2 dead canceled
	// redriven: 1
	// true
}

// Pause stops the consumers from starting jobs; enqueues are still
// accepted, and Stats says the queue is paused until Resume.
func ExampleQueue_Pause() {
	ctx := context.Background()
	q, _ := queue.New[string](ctx)
	defer q.Close(ctx)
	_ = q.Pause(ctx)
	_, _ = q.Enqueue(ctx, "held")
	s, _ := q.Stats(ctx)
	fmt.Println("paused:", s.Paused, "ready:", s.Ready)
	_ = q.Resume(ctx)
	c, _ := q.Consume(ctx, func(ctx context.Context, job queue.Job[string]) error {
		fmt.Println("handled", job.Payload)
		return nil
	})
	_, _ = c.Drain(ctx)
	// Output:
	// paused: true ready: 1
	// handled held
}
