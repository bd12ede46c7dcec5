package pool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/pool"
)

// sliceCtx is a context of an uncomparable type; wrapCtx is comparable but may hold one.
type sliceCtx struct {
	context.Context
	tags []string
}

type wrapCtx struct{ context.Context }

// A context whose type is comparable but whose dynamic value is not must not crash the worker
// that caches task contexts (comparing two such values panics).
func TestTaskContextUncomparableValue(t *testing.T) {
	p := pool.New(1, 4)
	defer mustClose(t, p)
	for _, c := range []context.Context{
		wrapCtx{sliceCtx{bg, []string{"a"}}},
		wrapCtx{sliceCtx{bg, []string{"b"}}},
		sliceCtx{bg, []string{"c"}},
		sliceCtx{bg, []string{"d"}},
	} {
		h, _ := pool.Call(c, p, func(context.Context) (int, error) { return 1, nil })
		if v, err := h.Wait(bg); v != 1 || err != nil {
			t.Fatalf("task = %v, %v", v, err)
		}
	}
}

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

// Wait keeps claiming the group's tasks that are queued while it waits: a group task on a
// one-worker pool that starts a sibling and waits for it does not deadlock.
func TestGroupWaitClaimsLaterTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 4)
		g := p.Group(bg)
		waiting := make(chan struct{})
		g.Go(func(ctx context.Context) error { // runs on the only worker
			<-waiting
			got := make(chan struct{})
			g.Go(func(context.Context) error { close(got); return nil }) // queued
			select {
			case <-got:
				return nil
			case <-time.After(time.Hour):
				return errors.New("sibling never ran")
			}
		})
		synctest.Wait()
		done := make(chan error, 1)
		go func() { done <- g.Wait() }()
		synctest.Wait() // Wait has nothing to claim yet
		close(waiting)
		if err := <-done; err != nil {
			t.Fatalf("Wait = %v", err)
		}
		mustClose(t, p)
		s := p.Stats()
		if s.Completed != 2 || s.Inline != 1 {
			t.Fatalf("stats %+v", s)
		}
		checkIdentity(t, s)
	})
}

// A group task that calls runtime.Goexit while Wait runs it inline fails; the goroutine that
// called Wait survives and Wait returns that failure.
func TestGroupInlineGoexitIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 4)
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate))
		g := p.Group(bg)
		g.Go(func(context.Context) error { runtime.Goexit(); return nil }) // queued: Wait runs it
		res := make(chan error, 1)
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			res <- g.Wait()
		}()
		<-exited
		select {
		case err := <-res:
			if err == nil || !strings.Contains(err.Error(), "Goexit") {
				t.Fatalf("Wait = %v; want the Goexit failure", err)
			}
		default:
			t.Fatal("the task's Goexit ended the goroutine that called Wait")
		}
		close(gate)
		mustClose(t, p)
		s := p.Stats()
		if s.Failed != 1 || s.Completed != 1 || s.Running != 0 {
			t.Fatalf("stats %+v", s)
		}
		checkIdentity(t, s)
	})
}

// The same when Go runs a task inline because the pool is full.
func TestGroupGoInlineGoexitIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 0)
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate))
		g := p.Group(bg)
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			g.Go(func(context.Context) error { runtime.Goexit(); return nil }) // inline
			close(gate)
			if err := g.Wait(); err == nil || !strings.Contains(err.Error(), "Goexit") {
				t.Errorf("Wait = %v; want the Goexit failure", err)
			}
		}()
		<-returned
		select {
		case <-gate:
		default:
			close(gate) // let the worker go, so that the failure below is reported, not a deadlock
			t.Fatal("the task's Goexit ended the goroutine that called Go")
		}
		mustClose(t, p)
		checkIdentity(t, p.Stats())
	})
}

// A Goexit in the error hook is not blamed on the task: it is counted once, the hook is called
// once, and the worker is replaced.
func TestErrorHookGoexitNotBlamedOnTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		p := pool.New(1, 1, pool.WithErrorHook(func(context.Context, error) {
			if calls.Add(1) == 1 {
				runtime.Goexit()
			}
		}))
		mustSubmit(t, p, bg, func(context.Context) error { return errors.New("x") })
		synctest.Wait()
		mustSubmit(t, p, bg, noop)
		mustClose(t, p)
		s := p.Stats()
		if s.Failed != 1 || s.Completed != 1 || s.Running != 0 || calls.Load() != 1 {
			t.Fatalf("hook calls %d; stats %+v", calls.Load(), s)
		}
		checkIdentity(t, s)
	})
}

// A Goexit in the drop hook, for a task skipped as expired, still resolves the task's Handle
// once, and is not blamed on the task.
func TestDropHookGoexitStillResolves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		p := pool.New(1, 2, pool.WithDropHook(func(context.Context, pool.Reason) {
			if calls.Add(1) == 1 {
				runtime.Goexit()
			}
		}))
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate))
		ctx, cancel := context.WithCancel(bg)
		h, _ := pool.Call(ctx, p, func(context.Context) (int, error) { return 1, nil })
		cancel()
		close(gate)
		if _, err := h.Wait(bg); !errors.Is(err, pool.ErrExpired) {
			t.Fatalf("handle = %v; want ErrExpired", err)
		}
		mustClose(t, p)
		s := p.Stats()
		if s.Skipped != 1 || s.Completed != 1 || s.Failed != 0 || s.Running != 0 || calls.Load() != 1 {
			t.Fatalf("hook calls %d; stats %+v", calls.Load(), s)
		}
		checkIdentity(t, s)
	})
}

// A Goexit in the error hook of a task run by CallerRuns ends the submitter, but the pool
// still counts the task once and Close returns.
func TestCallerRunsErrorHookGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 0, pool.WithOverflow(pool.CallerRuns),
			pool.WithErrorHook(func(context.Context, error) { runtime.Goexit() }))
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate))
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.Submit(bg, func(context.Context) error { return errors.New("x") }) // inline
		}()
		<-done
		close(gate)
		mustClose(t, p)
		s := p.Stats()
		if s.Failed != 1 || s.Completed != 1 || s.Running != 0 {
			t.Fatalf("stats %+v", s)
		}
		checkIdentity(t, s)
	})
}

// A follow-up task submitted with its parent task's own context runs with a live context when
// the worker that ran the parent picks it up: the worker does not cancel the context it
// derived for the parent, since the follow-up's context descends from it.
func TestFollowUpWithTaskContextRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 4)
		vctx := context.WithValue(bg, ctxKey{}, "req")
		type seen struct {
			v     any
			cause error
		}
		got := make(chan seen, 2)
		mustSubmit(t, p, vctx, func(ctx context.Context) error {
			return p.Submit(ctx, func(ctx context.Context) error {
				// and a follow-up of the follow-up, with a context derived from it
				return p.Submit(context.WithValue(ctx, ctxKey{}, "req2"), func(ctx context.Context) error {
					got <- seen{ctx.Value(ctxKey{}), context.Cause(ctx)}
					return nil
				})
			})
		})
		synctest.Wait()
		mustClose(t, p)
		if s := <-got; s.v != "req2" || s.cause != nil {
			t.Fatalf("follow-up saw value %v, cause %v; want req2, nil", s.v, s.cause)
		}
		s := p.Stats()
		if s.Completed != 3 || s.Skipped != 0 {
			t.Fatalf("stats %+v", s)
		}
		checkIdentity(t, s)
	})
}

// A follow-up whose parent task's context was cancelled by the time a worker picks it up (the
// worker moved on to another context) is skipped as expired; it never runs with an ended
// context.
func TestFollowUpAfterContextEndedIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d drops
		p := pool.New(1, 4, d.hook())
		actx := context.WithValue(bg, ctxKey{}, "a")
		xctx := context.WithValue(bg, ctxKey{}, "x")
		var r recorder
		var h *pool.Handle[int]
		mustSubmit(t, p, actx, func(ctx context.Context) error {
			mustSubmit(t, p, xctx, r.task(1)) // the worker moves on to xctx first
			h, _ = pool.Call(ctx, p, func(context.Context) (int, error) { return 2, nil })
			return nil
		})
		synctest.Wait()
		mustClose(t, p)
		if _, err := h.Wait(bg); !errors.Is(err, pool.ErrExpired) || !errors.Is(err, context.Canceled) {
			t.Fatalf("follow-up = %v; want expired, context.Canceled", err)
		}
		s := p.Stats()
		if got := r.got(); !slices.Equal(got, []int{1}) || s.Skipped != 1 || s.Completed != 2 {
			t.Fatalf("ran %v; stats %+v", got, s)
		}
		if got := d.got(); len(got) != 1 || got[0] != (drop{pool.Expired, "a"}) {
			t.Fatalf("drops %v", got)
		}
		checkIdentity(t, s)
	})
}

// Close wakes every parked worker to run the queue dry: 8 one-second tasks on 4 workers that
// were all parked when the tasks were queued take 2s, not 8s.
func TestCloseDrainsWithAllWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(4, 16, pool.WithIdleTimeout(time.Hour))
		gate := make(chan struct{})
		for range 4 {
			mustSubmit(t, p, bg, waitFor(gate))
		}
		close(gate)
		synctest.Wait() // 4 parked workers
		for range 8 {
			mustSubmit(t, p, bg, func(context.Context) error { time.Sleep(time.Second); return nil })
		}
		start := time.Now()
		mustClose(t, p)
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("Close drained 8 1s tasks on 4 workers in %v; want 2s", d)
		}
		checkIdentity(t, p.Stats())
	})
}

// Found in review: each follow-up submitted with its task's context was
// wrapped in one more pool-made context, so a chain of hops nested contexts
// without bound (1,001 cancel layers after 1,000 hops). A context that the
// pool made already ends with the pool: it is now used as is.
func TestFollowUpChainDoesNotNestContexts(t *testing.T) {
	p := pool.New(1, 4)
	vctx := context.WithValue(bg, ctxKey{}, "req")
	done := make(chan string, 1)
	var hop func(n int) func(context.Context) error
	hop = func(n int) func(context.Context) error {
		return func(ctx context.Context) error {
			if n == 0 {
				done <- fmt.Sprint(ctx)
				return nil
			}
			return p.Submit(ctx, hop(n-1))
		}
	}
	mustSubmit(t, p, vctx, hop(1000))
	if n := strings.Count(<-done, "WithCancel"); n != 1 {
		t.Errorf("the last hop's context has %d cancel layers, want 1", n)
	}
	mustClose(t, p)
}
