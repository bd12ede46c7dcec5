package queue_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
)

// WithLogger logs the queue's events with one option, at levels that keep the common case
// quiet (successes are Debug); WithName adds the queue's name to the records and, as a pprof
// label, to the profiles of its handler runs.
func ExampleWithLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // a fixed output for the example
			}
			return a
		},
	}))
	ctx := context.Background()
	q, err := queue.New[string](ctx, queue.WithName("emails"), queue.WithLogger(logger))
	if err != nil {
		panic(err)
	}
	defer q.Close(ctx)
	c, err := q.Consume(ctx, func(context.Context, queue.Job[string]) error {
		return errors.New("smtp: 421")
	}, queue.WithWorkers(1), queue.WithMaxAttempts(2), queue.WithBackoff(backoff.Constant(time.Millisecond)))
	if err != nil {
		panic(err)
	}
	if _, err := q.Enqueue(ctx, "welcome", queue.WithID("welcome-42")); err != nil {
		panic(err)
	}
	if _, err := c.Drain(ctx); err != nil {
		panic(err)
	}
	// Output:
	// level=WARN msg="queue: job retried" queue=emails event.id=welcome-42 event.attempt=1 event.err="smtp: 421" event.delay=1ms
	// level=ERROR msg="queue: job dead" queue=emails event.id=welcome-42 event.attempt=2 event.err="smtp: 421" event.reason=attempts
}
