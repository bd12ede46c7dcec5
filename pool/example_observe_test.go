package pool_test

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/corral-go/corral/pool"
)

// WithLogger logs drops and failures with one option; WithName adds the pool's name to the
// records and, as a pprof label, to the profiles of its workers.
func ExampleWithLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // a fixed output for the example
			}
			return a
		},
	}))
	p := pool.New(1, 1, pool.WithName("thumbnails"), pool.WithOverflow(pool.DropNewest), pool.WithLogger(logger))
	release := occupy(p)
	_ = p.Submit(context.Background(), func(context.Context) error { return errors.New("disk full") }) // queued
	_ = p.Submit(context.Background(), noop)                                                           // the queue is full: refused
	release()
	_ = p.Close(context.Background())
	// Output:
	// level=WARN msg="pool: task dropped" pool=thumbnails event.reason=refused
	// level=ERROR msg="pool: task failed" pool=thumbnails event.err="disk full"
}
