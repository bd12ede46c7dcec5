package pool_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/pool"
)

func wantPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		v := recover()
		s, ok := v.(string)
		if !ok || !strings.HasPrefix(s, "pool: ") {
			t.Errorf("%s: recovered %#v; want a panic with a \"pool: \" message", name, v)
		}
	}()
	f()
}

func TestNewPanicsOnInvalidArguments(t *testing.T) {
	wantPanic(t, "New(0, 1)", func() { pool.New(0, 1) })
	wantPanic(t, "New(-1, 1)", func() { pool.New(-1, 1) })
	wantPanic(t, "New(1, -1)", func() { pool.New(1, -1) })
	wantPanic(t, "WithOverflow(99)", func() { pool.WithOverflow(99) })
	wantPanic(t, "WithIdleTimeout(-1)", func() { pool.WithIdleTimeout(-1) })
	p := pool.New(1, 0)
	defer mustClose(t, p)
	wantPanic(t, "Submit(nil)", func() { _ = p.Submit(bg, nil) })
	wantPanic(t, "Call(nil)", func() { _, _ = pool.Call[int](bg, p, nil) })
	wantPanic(t, "Group.Go(nil)", func() { p.Group(bg).Go(nil) })
}

// A queue of 0 is hand-off only: a task is accepted only if a worker can take it.
func TestQueueZeroIsHandOffOnly(t *testing.T) {
	p := pool.New(1, 0, pool.WithOverflow(pool.Reject))
	gate := make(chan struct{})
	mustSubmit(t, p, bg, waitFor(gate))
	if err := p.Submit(bg, waitFor(gate)); !errors.Is(err, pool.ErrFull) {
		t.Fatalf("second Submit = %v; want ErrFull", err)
	}
	close(gate)
	mustClose(t, p)
	s := p.Stats()
	if s.Submitted != 2 || s.Completed != 1 || s.Rejected != 1 || s.Queued != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkIdentity(t, s)
}

func TestOverflowAndReasonStrings(t *testing.T) {
	for o, want := range map[pool.Overflow]string{
		pool.Block: "block", pool.Reject: "reject", pool.DropNewest: "drop-newest",
		pool.DropOldest: "drop-oldest", pool.CallerRuns: "caller-runs", 9: "Overflow(9)",
	} {
		if got := o.String(); got != want {
			t.Errorf("Overflow %d String = %q; want %q", o, got, want)
		}
	}
	for r, want := range map[pool.Reason]string{
		pool.ReasonRefused: "refused", pool.ReasonEvicted: "evicted", pool.ReasonExpired: "expired",
		pool.ReasonShutdown: "shutdown", 0: "Reason(0)", 9: "Reason(9)",
	} {
		if got := r.String(); got != want {
			t.Errorf("Reason %d String = %q; want %q", r, got, want)
		}
	}
}

// panicsWith asserts that f panics, in the calling goroutine, with exactly want.
func panicsWith(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if v := recover(); v != want {
			t.Errorf("recovered %#v; want a panic with %q", v, want)
		}
	}()
	f()
}

// Bad settings panic at construction with a message that names the call or the option.
func TestBadSettingsPanicNamingTheSetting(t *testing.T) {
	panicsWith(t, "pool: New(0, 1): workers must be at least 1", func() { pool.New(0, 1) })
	panicsWith(t, "pool: New(-1, 1): workers must be at least 1", func() { pool.New(-1, 1) })
	panicsWith(t, "pool: New(1, -1): negative queue capacity", func() { pool.New(1, -1) })
	panicsWith(t, "pool: WithOverflow(Overflow(99)): unknown overflow", func() { pool.WithOverflow(99) })
	panicsWith(t, "pool: WithIdleTimeout(-1s): negative timeout", func() { pool.WithIdleTimeout(-time.Second) })
	// A nil option used to be skipped.
	panicsWith(t, "pool: nil option", func() { pool.New(1, 0, nil) })
	panicsWith(t, "pool: nil option", func() { pool.New(1, 0, pool.WithTimings(), nil) })
	p := pool.New(1, 0)
	defer mustClose(t, p)
	var nilCtx context.Context
	panicsWith(t, "pool: nil context", func() { _ = p.Submit(nilCtx, noop) })
	panicsWith(t, "pool: nil context", func() { _, _ = pool.Call(nilCtx, p, func(context.Context) (int, error) { return 0, nil }) })
	panicsWith(t, "pool: nil context", func() { p.Group(nilCtx) })
	if s := p.Stats(); s.Submitted != 0 {
		t.Errorf("a submit that panicked was counted: %+v", s)
	}
}

// The zero values of Pool, Group and Handle panic at once, in the caller's goroutine, saying
// what to use, instead of deadlocking or dereferencing nil on another goroutine.
func TestZeroValuesPanicSayingWhatToUse(t *testing.T) {
	var p pool.Pool
	panicsWith(t, "pool: zero Pool: use pool.New", func() { _ = p.Submit(bg, noop) })
	panicsWith(t, "pool: zero Pool: use pool.New", func() {
		_, _ = pool.Call(bg, &p, func(context.Context) (int, error) { return 0, nil })
	})
	panicsWith(t, "pool: zero Pool: use pool.New", func() { p.Group(bg) })
	panicsWith(t, "pool: zero Pool: use pool.New", func() { _ = p.Close(bg) })
	if s := p.Stats(); s != (pool.Stats{}) {
		t.Errorf("zero Pool's Stats = %+v; want zero", s)
	}
	var g pool.Group
	panicsWith(t, "pool: zero Group: use Pool.Group", func() { g.Go(noop) })
	panicsWith(t, "pool: zero Group: use Pool.Group", func() { _ = g.Wait() })
	var h pool.Handle[int]
	panicsWith(t, "pool: zero Handle: use pool.Call", func() { _, _ = h.Wait(bg) })
	panicsWith(t, "pool: zero Handle: use pool.Call", func() { h.Done() })
}
