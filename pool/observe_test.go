package pool_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/corral-go/corral/internal/logtest"
	"github.com/corral-go/corral/internal/proflabels"
	"github.com/corral-go/corral/pool"
)

// WithLogger logs one record per drop and per failed Submit task, exactly, and the Hooks set
// by WithHooks are still called.
func TestWithLoggerRecords(t *testing.T) {
	var buf bytes.Buffer
	var hooked int
	p := pool.New(1, 0, pool.WithName("img"), pool.WithOverflow(pool.DropNewest),
		pool.WithLogger(logtest.Text(&buf, slog.LevelInfo)),
		pool.WithHooks(pool.Hooks{OnDrop: func(context.Context, pool.DropEvent) { hooked++ }}))
	gate := make(chan struct{})
	mustSubmit(t, p, bg, func(context.Context) error { <-gate; return errors.New("boom") })
	if err := p.Submit(bg, func(context.Context) error { return nil }); !errors.Is(err, pool.ErrDropped) {
		t.Fatalf("Submit to a full pool: %v, want ErrDropped", err)
	}
	close(gate)
	mustClose(t, p)
	// The pool is not timed (no WithTimings, no OnError hook): no duration is logged.
	got := buf.String()
	want := `level=WARN msg="pool: task dropped" pool=img event.reason=refused
level=ERROR msg="pool: task failed" pool=img event.err=boom
`
	if got != want {
		t.Fatalf("log:\n%s\nwant:\n%s", got, want)
	}
	if hooked != 1 {
		t.Fatalf("OnDrop calls = %d, want 1", hooked)
	}
}

// A level the logger does not enable installs no hook: an untimed pool stays untimed (it times
// its sample of tasks only: the first of these 8), and its failures are not logged.
func TestWithLoggerDisabledLevel(t *testing.T) {
	var buf bytes.Buffer
	p := pool.New(1, 8, pool.WithLogger(logtest.Text(&buf, slog.LevelError+1)))
	for range 8 {
		mustSubmit(t, p, bg, func(context.Context) error { return errors.New("boom") })
	}
	mustClose(t, p)
	if buf.Len() != 0 {
		t.Fatalf("log: %q, want none", buf.String())
	}
	if s := p.Stats(); s.Failed != 8 || s.Run.Count != 1 {
		t.Fatalf("Stats: %d failed, Run.Count %d; want 8 and 1 (logging must not time the pool)", s.Failed, s.Run.Count)
	}
}

// probeLabels is called by a task: its name marks the task's goroutine in the profile.
func probeLabels() (string, error) { return proflabels.Of("pool_test.probeLabels") }

// A named pool's tasks run with the label pool=name, on its workers and on the helper
// goroutine of a task run for its caller (CallerRuns); an unnamed pool's with none.
func TestWithNameLabelsTasks(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []pool.Option
		want string
	}{
		{"named", []pool.Option{pool.WithName("img")}, `{"pool":"img"}`},
		{"unnamed", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pool.New(1, 0, append(tc.opts, pool.WithOverflow(pool.CallerRuns))...)
			var got [2]string
			var errs [2]error
			gate := make(chan struct{})
			mustSubmit(t, p, bg, func(context.Context) error {
				got[0], errs[0] = probeLabels()
				<-gate
				return nil
			})
			// The worker is busy: this one runs for its caller.
			mustSubmit(t, p, bg, func(context.Context) error {
				got[1], errs[1] = probeLabels()
				return nil
			})
			close(gate)
			mustClose(t, p)
			for i, where := range []string{"worker", "caller runs"} {
				if errs[i] != nil {
					t.Fatalf("%s: %v", where, errs[i])
				}
				if got[i] != tc.want {
					t.Errorf("%s: labels %q, want %q", where, got[i], tc.want)
				}
			}
		})
	}
}

func TestWithNameEmptyPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != `pool: WithName(""): empty name` {
			t.Fatalf("recovered %v", r)
		}
	}()
	pool.WithName("")
}
