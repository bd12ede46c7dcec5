package pool_test

import (
	"errors"
	"strings"
	"testing"

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

func TestPolicyAndReasonStrings(t *testing.T) {
	for p, want := range map[pool.Policy]string{
		pool.Block: "Block", pool.Reject: "Reject", pool.DropNewest: "DropNewest",
		pool.DropOldest: "DropOldest", pool.CallerRuns: "CallerRuns", 9: "Policy(9)",
	} {
		if got := p.String(); got != want {
			t.Errorf("Policy %d String = %q; want %q", p, got, want)
		}
	}
	if got := pool.Expired.String(); got != "expired in queue" {
		t.Errorf("Expired.String() = %q", got)
	}
}
