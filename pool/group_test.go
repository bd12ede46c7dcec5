package pool_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/pool"
)

func TestGroupWaitsForAll(t *testing.T) {
	p := pool.New(2, 4)
	defer mustClose(t, p)
	var n atomic.Int64
	g := p.Group(bg)
	for range 100 { // more than the queue holds: the rest run in this goroutine
		g.Go(func(context.Context) error { n.Add(1); return nil })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 100 {
		t.Fatalf("ran %d tasks; want 100", n.Load())
	}
	s := p.Stats()
	if s.Completed != 100 {
		t.Fatalf("stats %+v", s)
	}
	checkIdentity(t, s)
}

// The first failure cancels the group's other tasks (only them), and Wait returns every real
// failure, root cause first; echoes of the cancellation are not failures.
func TestGroupFailFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(4, 8)
		outside := make(chan error, 1)
		release := make(chan struct{})
		mustSubmit(t, p, bg, func(ctx context.Context) error { // a task outside the group
			<-release
			outside <- ctx.Err()
			return nil
		})
		g := p.Group(bg)
		root := errors.New("root cause")
		second := errors.New("second failure")
		stopped := make(chan struct{})
		g.Go(func(ctx context.Context) error { // echo: returns the context's error
			<-ctx.Done()
			close(stopped)
			return ctx.Err()
		})
		g.Go(func(ctx context.Context) error { // a real failure after the cancellation
			<-ctx.Done()
			<-stopped
			return second
		})
		synctest.Wait()
		g.Go(func(context.Context) error { return root })
		err := g.Wait()
		if !errors.Is(err, root) || !errors.Is(err, second) || errors.Is(err, context.Canceled) {
			t.Fatalf("Wait = %v", err)
		}
		if got := err.Error(); got != "root cause\nsecond failure" {
			t.Fatalf("Wait = %q; want root cause first", got)
		}
		close(release)
		if err := <-outside; err != nil {
			t.Fatalf("task outside the group saw %v", err)
		}
		mustClose(t, p)
		checkIdentity(t, p.Stats())
	})
}

func TestGroupSkipsAfterCancel(t *testing.T) {
	p := pool.New(1, 8)
	gate := make(chan struct{})
	mustSubmit(t, p, bg, waitFor(gate))
	ctx, cancel := context.WithCancelCause(bg)
	g := p.Group(ctx)
	var ran atomic.Int64
	for range 3 {
		g.Go(func(context.Context) error { ran.Add(1); return nil })
	}
	parent := errors.New("parent gone")
	cancel(parent)
	g.Go(func(context.Context) error { ran.Add(1); return nil })
	if err := g.Wait(); err != parent {
		t.Fatalf("Wait = %v; want the parent's cause", err)
	}
	close(gate)
	mustClose(t, p)
	s := p.Stats()
	if ran.Load() != 0 || s.Skipped != 4 {
		t.Fatalf("ran %d; stats %+v", ran.Load(), s)
	}
	checkIdentity(t, s)
}

// A worker, too, skips a queued task of a group that was cancelled while it waited.
func TestGroupWorkerSkipsAfterCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d drops
		p := pool.New(1, 8, d.hook())
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate))
		ctx, cancel := context.WithCancelCause(bg)
		g := p.Group(ctx)
		var ran atomic.Int64
		for range 3 {
			g.Go(func(context.Context) error { ran.Add(1); return nil })
		}
		parent := errors.New("parent gone")
		cancel(parent)
		close(gate)
		synctest.Wait() // the worker has taken the queue
		if s := p.Stats(); s.Queued != 0 || s.Skipped != 3 || s.Started != 1 {
			t.Fatalf("stats after the worker ran dry: %+v", s)
		}
		if err := g.Wait(); err != parent {
			t.Fatalf("Wait = %v; want the parent's cause", err)
		}
		mustClose(t, p)
		if ran.Load() != 0 || len(d.got()) != 3 {
			t.Fatalf("ran %d; drops %v", ran.Load(), d.got())
		}
		for _, x := range d.got() {
			if x.reason != pool.ReasonExpired {
				t.Fatalf("drop reason %v; want Expired", x.reason)
			}
		}
		checkIdentity(t, p.Stats())
	})
}

func TestGroupPanicIsFailure(t *testing.T) {
	p := pool.New(2, 2)
	defer mustClose(t, p)
	g := p.Group(bg)
	g.Go(func(context.Context) error { panic("group boom") })
	err := g.Wait()
	var pe *pool.PanicError
	if !errors.As(err, &pe) || pe.Value != "group boom" || !strings.Contains(string(pe.Stack), "group_test.go") {
		t.Fatalf("Wait = %v; want a *PanicError with its stack", err)
	}
}

// A task that waits on a group of its own pool does not deadlock, even with one worker, with
// or without a queue.
func TestGroupNestedNoDeadlock(t *testing.T) {
	for _, q := range []int{0, 1, 16} {
		synctest.Test(t, func(t *testing.T) {
			p := pool.New(1, q)
			var n atomic.Int64
			h, err := pool.Call(bg, p, func(ctx context.Context) (int, error) {
				g := p.Group(ctx)
				for range 5 {
					g.Go(func(ctx context.Context) error {
						inner := p.Group(ctx) // and one level deeper
						inner.Go(func(context.Context) error { n.Add(1); return nil })
						return inner.Wait()
					})
				}
				return 0, g.Wait()
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Wait(bg); err != nil {
				t.Fatal(err)
			}
			mustClose(t, p)
			if n.Load() != 5 {
				t.Fatalf("queue %d: ran %d inner tasks; want 5", q, n.Load())
			}
			checkIdentity(t, p.Stats())
		})
	}
}

func TestGroupGoAfterWaitPanics(t *testing.T) {
	p := pool.New(1, 1)
	defer mustClose(t, p)
	g := p.Group(bg)
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	wantPanic(t, "Go after Wait", func() { g.Go(func(context.Context) error { return nil }) })
}

// A long-lived group does not keep every task it ever queued.
func TestGroupPendingStaysShort(t *testing.T) {
	p := pool.New(2, 4)
	defer mustClose(t, p)
	g := p.Group(bg)
	for range 10000 {
		g.Go(func(context.Context) error { return nil })
	}
	if n := pool.GroupPending(g); n > 64 {
		t.Fatalf("group remembers %d queued tasks; want at most a few", n)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// Tasks that Group.Wait claimed do not keep taking room in the queue.
func TestGroupClaimFreesQueueRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 2, pool.WithOverflow(pool.Reject))
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate))
		g := p.Group(bg)
		var ran atomic.Int64
		g.Go(func(context.Context) error { ran.Add(1); return nil })
		g.Go(func(context.Context) error { ran.Add(1); return nil })
		if err := g.Wait(); err != nil || ran.Load() != 2 {
			t.Fatalf("Wait = %v, ran %d", err, ran.Load())
		}
		// The queue is logically empty: two more tasks fit.
		mustSubmit(t, p, bg, waitFor(gate))
		mustSubmit(t, p, bg, waitFor(gate))
		if err := p.Submit(bg, waitFor(gate)); err != pool.ErrFull {
			t.Fatalf("third Submit = %v; want ErrFull", err)
		}
		close(gate)
		mustClose(t, p)
		checkIdentity(t, p.Stats())
	})
}

// Under DropOldest, a queue that holds group tasks claimed by Wait evicts the
// oldest live task, never a claimed one.
func TestGroupClaimThenDropOldestEvictsALiveTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var evicted []pool.Reason
		p := pool.New(1, 2, pool.WithOverflow(pool.DropOldest),
			onDrop(func(_ context.Context, r pool.Reason) { evicted = append(evicted, r) }))
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate))
		g := p.Group(bg)
		g.Go(func(context.Context) error { return nil })
		g.Go(func(context.Context) error { return nil })
		if err := g.Wait(); err != nil { // claims both: the queue holds two tombstones
			t.Fatal(err)
		}
		var r recorder
		mustSubmit(t, p, bg, r.task(1))
		mustSubmit(t, p, bg, r.task(2))
		mustSubmit(t, p, bg, r.task(3)) // full of live tasks: evicts 1
		close(gate)
		mustClose(t, p)
		if got, want := r.got(), []int{2, 3}; !slices.Equal(got, want) {
			t.Fatalf("ran %v; want %v", got, want)
		}
		if !slices.Equal(evicted, []pool.Reason{pool.ReasonEvicted}) {
			t.Fatalf("drop hook saw %v; want one eviction", evicted)
		}
		checkIdentity(t, p.Stats())
	})
}

// When Group.Wait claims queued tasks, blocked submitters move into the room at once.
func TestGroupClaimAdmitsBlockedSubmitters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 2)
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate))
		g := p.Group(bg)
		g.Go(func(context.Context) error { return nil })
		g.Go(func(context.Context) error { return nil })
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- p.Submit(bg, func(context.Context) error { return nil }) }()
		}
		synctest.Wait()
		if got := p.Stats().Waiting; got != 2 {
			t.Fatalf("Waiting = %d; want 2", got)
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := <-errs; err != nil { // admitted while the worker is still busy
				t.Fatal(err)
			}
		}
		if s := p.Stats(); s.Queued != 2 || s.Waiting != 0 {
			t.Fatalf("stats %+v", s)
		}
		close(gate)
		mustClose(t, p)
		checkIdentity(t, p.Stats())
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
