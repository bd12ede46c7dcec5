package queue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/queue"
)

// A handler waits for a payment to settle without spending its attempts:
// it snoozes the job until the payment is seen settled. Its one allowed
// attempt is still unspent on the third run.
func ExampleSnooze() {
	ctx := context.Background()
	q, _ := queue.New[string](ctx)
	defer q.Close(ctx)
	var checks atomic.Int32
	settled := func(string) bool { return checks.Add(1) == 3 } // a call to the payment service
	done := make(chan queue.Job[string])
	c, _ := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		if !settled(j.Payload) {
			return queue.Snooze(10 * time.Millisecond)
		}
		done <- j
		return nil
	}, queue.WithMaxAttempts(1), queue.WithMaxSnoozes(5))
	_, _ = q.Enqueue(ctx, "payment 42")
	j := <-done
	_, _ = c.Drain(ctx)
	st, _ := q.Stats(ctx)
	fmt.Printf("%s handled on run %d at attempt %d, after %d snoozes\n", j.Payload, checks.Load(), j.Attempt, st.Snoozed)
	// Output:
	// payment 42 handled on run 3 at attempt 1, after 2 snoozes
}
