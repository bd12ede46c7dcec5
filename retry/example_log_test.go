package retry_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
)

// WithLogger logs every retry and the give-up with one option.
func ExampleWithLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // a fixed output for the example
			}
			return a
		},
	}))
	p := retry.New(retry.WithMaxAttempts(2), retry.WithBackoff(backoff.Constant(time.Millisecond)),
		retry.WithLogger(logger.With("dependency", "billing")))
	_ = retry.Do(context.Background(), p, func(context.Context) error { return errors.New("503") })
	// Output:
	// level=WARN msg="retry: retrying" dependency=billing event.attempt=1 event.err=503 event.delay=1ms
	// level=ERROR msg="retry: gave up" dependency=billing event="retry: max attempts reached after 2 attempts: 503"
}
