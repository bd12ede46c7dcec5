package pool_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/corral-go/corral/pool"
)

// Blocked submitters are admitted first come, first served, whether they
// wait for a place in the queue or, with a queue of 0, for the worker itself.
func TestBlockIsFIFO(t *testing.T) {
	for _, queued := range []int{1, 0} {
		t.Run(fmt.Sprintf("queue=%d", queued), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := pool.New(1, queued) // Block is the default
				gate := make(chan struct{})
				var r recorder
				mustSubmit(t, p, bg, waitFor(gate)) // runs
				var want []int
				if queued == 1 {
					mustSubmit(t, p, bg, r.task(0)) // fills the queue
					want = append(want, 0)
				}
				const blocked = 6
				errs := make(chan error, blocked)
				for i := 1; i <= blocked; i++ {
					go func() { errs <- p.Submit(bg, r.task(i)) }()
					synctest.Wait() // submitter i is blocked before i+1 starts
					if got := p.Stats().Waiting; got != i {
						t.Fatalf("Waiting = %d; want %d", got, i)
					}
					want = append(want, i)
				}
				close(gate)
				for range blocked {
					if err := <-errs; err != nil {
						t.Fatalf("blocked Submit = %v", err)
					}
				}
				mustClose(t, p)
				if got := r.got(); !slices.Equal(got, want) {
					t.Fatalf("ran %v; want %v", got, want)
				}
				checkIdentity(t, p.Stats())
			})
		})
	}
}

// A blocked Submit ends with the cause of the submitter's context, and the others keep their
// place in line.
func TestBlockEndsWithContextCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 0)
		gate := make(chan struct{})
		var r recorder
		mustSubmit(t, p, bg, waitFor(gate))
		errA, errB, errC := make(chan error, 1), make(chan error, 1), make(chan error, 1)
		go func() { errA <- p.Submit(bg, r.task(1)) }()
		synctest.Wait()
		ctx, cancel := context.WithCancelCause(bg)
		go func() { errB <- p.Submit(ctx, r.task(2)) }()
		synctest.Wait()
		go func() { errC <- p.Submit(bg, r.task(3)) }()
		synctest.Wait()
		cause := errors.New("caller gave up")
		cancel(cause)
		if err := <-errB; err != cause {
			t.Fatalf("cancelled Submit = %v; want the cause %v", err, cause)
		}
		if got := p.Stats().Waiting; got != 2 {
			t.Fatalf("Waiting = %d; want 2", got)
		}
		close(gate)
		if err := <-errA; err != nil {
			t.Fatal(err)
		}
		if err := <-errC; err != nil {
			t.Fatal(err)
		}
		mustClose(t, p)
		if got := r.got(); !slices.Equal(got, []int{1, 3}) {
			t.Fatalf("ran %v; want [1 3]", got)
		}
		s := p.Stats()
		if s.Rejected != 1 || s.Completed != 3 {
			t.Fatalf("stats %+v", s)
		}
		checkIdentity(t, s)
	})
}

// A blocked Submit ends with ErrClosed when the pool closes; the queued task still runs.
func TestBlockEndsWithErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 1)
		gate := make(chan struct{})
		var r recorder
		mustSubmit(t, p, bg, waitFor(gate))
		mustSubmit(t, p, bg, r.task(1))
		errs := make(chan error, 1)
		go func() { errs <- p.Submit(bg, r.task(2)) }()
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- p.Close(bg) }()
		if err := <-errs; !errors.Is(err, pool.ErrClosed) {
			t.Fatalf("blocked Submit = %v; want ErrClosed", err)
		}
		if err := p.Submit(bg, r.task(3)); !errors.Is(err, pool.ErrClosed) {
			t.Fatalf("Submit after Close = %v; want ErrClosed", err)
		}
		close(gate)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if got := r.got(); !slices.Equal(got, []int{1}) {
			t.Fatalf("ran %v; want [1]", got)
		}
		s := p.Stats()
		if s.Rejected != 2 || s.Completed != 2 || s.Submitted != 4 {
			t.Fatalf("stats %+v", s)
		}
		checkIdentity(t, s)
	})
}

func TestRejectReturnsErrFull(t *testing.T) {
	p := pool.New(1, 2, pool.WithOverflow(pool.Reject))
	gate := make(chan struct{})
	mustSubmit(t, p, bg, waitFor(gate))
	mustSubmit(t, p, bg, waitFor(gate))
	mustSubmit(t, p, bg, waitFor(gate))
	for range 3 {
		if err := p.Submit(bg, waitFor(gate)); err != pool.ErrFull {
			t.Fatalf("Submit on a full pool = %v; want ErrFull", err)
		}
	}
	h, err := pool.Call(bg, p, func(context.Context) (int, error) { return 1, nil })
	if err != pool.ErrFull {
		t.Fatalf("Call = %v; want ErrFull", err)
	}
	if _, werr := h.Wait(bg); werr != pool.ErrFull {
		t.Fatalf("rejected handle = %v; want ErrFull", werr)
	}
	close(gate)
	mustClose(t, p)
	s := p.Stats()
	if s.Rejected != 4 || s.Completed != 3 {
		t.Fatalf("stats %+v", s)
	}
	checkIdentity(t, s)
}

func TestDropNewestRefusesIncoming(t *testing.T) {
	var d drops
	p := pool.New(1, 1, pool.WithOverflow(pool.DropNewest), d.hook())
	gate := make(chan struct{})
	var r recorder
	mustSubmit(t, p, bg, waitFor(gate))
	mustSubmit(t, p, bg, r.task(1))
	ctx := context.WithValue(bg, ctxKey{}, "newest")
	if err := p.Submit(ctx, r.task(2)); !errors.Is(err, pool.ErrDropped) {
		t.Fatalf("Submit = %v; want ErrDropped", err)
	}
	close(gate)
	mustClose(t, p)
	if got := r.got(); !slices.Equal(got, []int{1}) {
		t.Fatalf("ran %v; want [1]", got)
	}
	if got := d.got(); !slices.Equal(got, []drop{{pool.ReasonRefused, "newest"}}) {
		t.Fatalf("OnDrop got %v", got)
	}
	s := p.Stats()
	if s.Dropped != (pool.Drops{Refused: 1}) || s.Completed != 2 {
		t.Fatalf("stats %+v", s)
	}
	checkIdentity(t, s)
}

func TestDropOldestEvictsOldest(t *testing.T) {
	var d drops
	p := pool.New(1, 2, pool.WithOverflow(pool.DropOldest), d.hook())
	gate := make(chan struct{})
	mustSubmit(t, p, bg, waitFor(gate))
	var hs []*pool.Handle[int]
	for i := range 4 {
		ctx := context.WithValue(bg, ctxKey{}, i)
		h, err := pool.Call(ctx, p, func(context.Context) (int, error) { return i, nil })
		if err != nil {
			t.Fatalf("Call %d = %v", i, err)
		}
		hs = append(hs, h)
	}
	close(gate)
	for i, h := range hs {
		v, err := h.Wait(bg)
		if i < 2 {
			if !errors.Is(err, pool.ErrDropped) || errors.Is(err, pool.ErrClosed) {
				t.Errorf("handle %d = %v, %v; want ErrDropped", i, v, err)
			}
			continue
		}
		if v != i || err != nil {
			t.Errorf("handle %d = %v, %v; want %d, nil", i, v, err, i)
		}
	}
	mustClose(t, p)
	if got := d.got(); !slices.Equal(got, []drop{{pool.ReasonEvicted, 0}, {pool.ReasonEvicted, 1}}) {
		t.Fatalf("OnDrop got %v", got)
	}
	s := p.Stats()
	if s.Dropped != (pool.Drops{Evicted: 2}) || s.Completed != 3 {
		t.Fatalf("stats %+v", s)
	}
	checkIdentity(t, s)
}

// With a queue of 0 there is nothing to evict: the incoming task is refused.
func TestDropOldestWithoutQueueRefuses(t *testing.T) {
	var d drops
	p := pool.New(1, 0, pool.WithOverflow(pool.DropOldest), d.hook())
	gate := make(chan struct{})
	mustSubmit(t, p, bg, waitFor(gate))
	if err := p.Submit(bg, waitFor(gate)); !errors.Is(err, pool.ErrDropped) {
		t.Fatalf("Submit = %v; want ErrDropped", err)
	}
	close(gate)
	mustClose(t, p)
	if got := d.got(); !slices.Equal(got, []drop{{pool.ReasonRefused, nil}}) {
		t.Fatalf("OnDrop got %v", got)
	}
	checkIdentity(t, p.Stats())
}

type goroutineKey struct{}

func TestCallerRunsInSubmitter(t *testing.T) {
	var failures []error
	p := pool.New(1, 1, pool.WithOverflow(pool.CallerRuns),
		onError(func(_ context.Context, err error) { failures = append(failures, err) }))
	gate := make(chan struct{})
	mustSubmit(t, p, bg, waitFor(gate))
	mustSubmit(t, p, bg, waitFor(gate))
	// The pool is full: the next tasks run here, before Submit returns.
	ran := false
	ctx := context.WithValue(bg, goroutineKey{}, "submitter")
	mustSubmit(t, p, ctx, func(ctx context.Context) error {
		ran = ctx.Value(goroutineKey{}) == "submitter"
		return nil
	})
	if !ran {
		t.Fatal("CallerRuns task did not run in Submit with the submitter's context")
	}
	// Its panic is handled like any task's: recovered, counted, reported.
	mustSubmit(t, p, bg, func(context.Context) error { panic("boom") })
	h, err := pool.Call(bg, p, func(context.Context) (int, error) { return 7, nil })
	if v, werr := h.Wait(bg); err != nil || v != 7 || werr != nil {
		t.Fatalf("Call = %v; Wait = %v, %v", err, v, werr)
	}
	close(gate)
	mustClose(t, p)
	var pe *pool.PanicError
	if len(failures) != 1 || !errors.As(failures[0], &pe) || pe.Value != "boom" {
		t.Fatalf("error hook got %v; want one *PanicError(boom)", failures)
	}
	s := p.Stats()
	if s.Inline != 3 || s.Panicked != 1 || s.Completed != 4 {
		t.Fatalf("stats %+v", s)
	}
	checkIdentity(t, s)
}

// Under Block, a task that submits to its own full pool waits, holding its worker, until its
// ctx ends or the pool closes (documented on Submit, Call and Block: issue 14, item 10).
func TestBlockTaskSubmittingToItsOwnPool(t *testing.T) {
	errStop := errors.New("stop")
	submits := map[string]func(ctx context.Context, p *pool.Pool) error{
		"Submit": func(ctx context.Context, p *pool.Pool) error { return p.Submit(ctx, waitFor(nil)) },
		"Call": func(ctx context.Context, p *pool.Pool) error {
			_, err := pool.Call(ctx, p, func(context.Context) (int, error) { return 0, nil })
			return err
		},
	}
	endings := []struct {
		name string
		end  func(t *testing.T, p *pool.Pool, cancel context.CancelCauseFunc)
		want error
	}{
		{"ctx", func(_ *testing.T, _ *pool.Pool, cancel context.CancelCauseFunc) { cancel(errStop) }, errStop},
		{"Close", func(t *testing.T, p *pool.Pool, _ context.CancelCauseFunc) { mustClose(t, p) }, pool.ErrClosed},
	}
	for name, submit := range submits {
		for _, e := range endings {
			t.Run(name+"/"+e.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := pool.New(1, 0) // Block
					ctx, cancel := context.WithCancelCause(bg)
					defer cancel(nil)
					inner := make(chan error, 1)
					mustSubmit(t, p, bg, func(context.Context) error {
						inner <- submit(ctx, p)
						return nil
					})
					synctest.Wait()
					if s := p.Stats(); s.Waiting != 1 || s.Running != 1 {
						t.Fatalf("stats %+v; want the task blocked in its own %s", s, name)
					}
					e.end(t, p, cancel)
					if err := <-inner; !errors.Is(err, e.want) {
						t.Fatalf("%s from the task = %v; want %v", name, err, e.want)
					}
					mustClose(t, p)
				})
			})
		}
	}
}
