package queue_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/corral-go/corral/queue"
)

// Two runners of one schedule, as two processes of a service would run
// it: each tick is enqueued once, by whichever runner comes first, with the
// tick in its ID; the other's enqueue is a duplicate (see Periodic.Stats).
func ExampleQueue_Periodic() {
	ctx := context.Background()
	// Each tick's ID must stay taken for longer than the period.
	q, _ := queue.New[time.Time](ctx, queue.WithDedupHorizon(time.Minute))
	defer q.Close(ctx)
	ticks := make(chan queue.Job[time.Time], 10)
	c, _ := q.Consume(ctx, func(ctx context.Context, j queue.Job[time.Time]) error {
		ticks <- j
		return nil
	})
	defer c.Close(ctx)
	payload := func(tick time.Time) time.Time { return tick } // the period the job covers
	a, _ := q.Periodic("rollup", queue.Every(20*time.Millisecond), payload)
	b, _ := q.Periodic("rollup", queue.Every(20*time.Millisecond), payload)
	for range 3 {
		j := <-ticks
		fmt.Println(strings.HasPrefix(j.ID, "rollup@"), j.ID == "rollup@"+j.Payload.UTC().Format(time.RFC3339Nano))
	}
	a.Stop()
	b.Stop()
	// Output:
	// true true
	// true true
	// true true
}
