package scope_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/internal/logtest"
	"github.com/corral-go/corral/scope"
)

// WithLogger logs each failure as it happens and the stuck report; a task that returns the
// scope's cancellation is not logged.
func TestWithLoggerRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		var reports int
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.GoNamed("ignores-cancel", func(ctx context.Context) error {
				time.Sleep(10 * time.Second) // does not watch ctx
				return nil
			})
			s.GoNamed("well-behaved", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
			s.GoNamed("fails", func(ctx context.Context) error {
				time.Sleep(time.Second)
				return errA
			})
			return nil
		}, scope.WithJoiner(scope.FailFast), scope.WithLogger(logtest.Text(&buf, slog.LevelInfo)),
			scope.WithStuckReport(3*time.Second, func(context.Context, []string) { reports++ }))
		errIs(t, err, errA)
		equal(t, 1, reports, "the report is still called")
		equal(t, `level=ERROR msg="scope: task failed" event="scope: task \"fails\" failed: a failed"
level=WARN msg="scope: tasks still running" running=[ignores-cancel]
`, buf.String(), "log")
	})
}
