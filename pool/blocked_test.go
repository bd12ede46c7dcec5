package pool_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/corral-go/corral/pool"
)

// With a queue of 0, a blocked submitter whose context ended while it waited is refused with
// the context's cause when a worker frees up; its task does not run.
func TestHandOffRefusesExpiredWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 0)
		ctx, cancel := context.WithCancelCause(bg)
		cause := errors.New("gave up")
		gate := make(chan struct{})
		mustSubmit(t, p, bg, func(context.Context) error { <-gate; cancel(cause); return nil })
		ran := false
		sub := make(chan error, 1)
		go func() { sub <- p.Submit(ctx, func(context.Context) error { ran = true; return nil }) }()
		synctest.Wait()
		close(gate) // the worker cancels ctx, then fetches the waiter's task at once
		if err := <-sub; !errors.Is(err, cause) {
			t.Fatalf("Submit = %v; want %v", err, cause)
		}
		mustClose(t, p)
		s := p.Stats()
		if ran || s.Rejected != 1 || s.Completed != 1 || s.Started != 1 {
			t.Fatalf("ran %v; stats %+v", ran, s)
		}
		checkIdentity(t, s)
	})
}

// The same with a queue: a waiter whose context ended is refused rather than admitted.
func TestAdmitRefusesExpiredWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 1)
		ctx, cancel := context.WithCancelCause(bg)
		cause := errors.New("gave up")
		gate := make(chan struct{})
		mustSubmit(t, p, bg, func(context.Context) error { <-gate; cancel(cause); return nil })
		var r recorder
		mustSubmit(t, p, bg, r.task(1))
		sub := make(chan error, 1)
		go func() { sub <- p.Submit(ctx, r.task(2)) }()
		synctest.Wait()
		close(gate)
		if err := <-sub; !errors.Is(err, cause) {
			t.Fatalf("Submit = %v; want %v", err, cause)
		}
		mustClose(t, p)
		s := p.Stats()
		if got := r.got(); !slices.Equal(got, []int{1}) || s.Rejected != 1 || s.Skipped != 0 {
			t.Fatalf("ran %v; stats %+v", got, s)
		}
		checkIdentity(t, s)
	})
}
