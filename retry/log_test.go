package retry_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/internal/logtest"
	"github.com/corral-go/corral/retry"
)

// WithLogger logs one record per retry and one as the call gives up, exactly; the Hooks set by
// WithHooks are still called, and a level the logger does not enable logs nothing.
func TestWithLoggerRecords(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelInfo, `level=WARN msg="retry: retrying" event.attempt=1 event.err=down event.delay=1s
level=WARN msg="retry: retrying" event.attempt=2 event.err=down event.delay=1s
level=ERROR msg="retry: gave up" event="retry: max attempts reached after 3 attempts: down"
`},
		{slog.LevelError, `level=ERROR msg="retry: gave up" event="retry: max attempts reached after 3 attempts: down"
`},
		{slog.LevelError + 1, ""},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var buf bytes.Buffer
				var gaveUp int
				p := retry.New(retry.WithMaxAttempts(3), retry.WithBackoff(backoff.Constant(time.Second)),
					retry.WithLogger(logtest.Text(&buf, tc.level)),
					retry.WithHooks(retry.Hooks{OnGiveUp: func(context.Context, *retry.Error) { gaveUp++ }}))
				err := retry.Do(context.Background(), p, func(context.Context) error { return errors.New("down") })
				if !errors.Is(err, retry.ErrExhausted) {
					t.Fatalf("Do: %v, want ErrExhausted", err)
				}
				if got := buf.String(); got != tc.want {
					t.Fatalf("log:\n%s\nwant:\n%s", got, tc.want)
				}
				if gaveUp != 1 {
					t.Fatalf("OnGiveUp calls = %d, want 1", gaveUp)
				}
			})
		})
	}
}
