package pool_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/pool"
)

// A task's context carries the submitter's values and ends with the submitter's context.
func TestTaskContextFollowsSubmitter(t *testing.T) {
	p := pool.New(2, 4)
	defer mustClose(t, p)
	ctx, cancel := context.WithCancelCause(context.WithValue(bg, ctxKey{}, "v"))
	started := make(chan struct{})
	h, err := pool.Call(ctx, p, func(ctx context.Context) (any, error) {
		close(started)
		<-ctx.Done()
		return ctx.Value(ctxKey{}), context.Cause(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cause := errors.New("submitter cancelled")
	cancel(cause)
	v, err := h.Wait(bg)
	if v != "v" || err != cause {
		t.Fatalf("task saw value %v, cause %v; want v, %v", v, err, cause)
	}
}

// Close's deadline reaches running tasks, whatever context they were submitted with: the
// background and TODO contexts (no derivation), a value-only context and a cancellable one.
func TestTaskContextEndsAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(4, 0)
		cctx, cancel := context.WithCancel(bg)
		defer cancel()
		var hs []*pool.Handle[any]
		for _, ctx := range []context.Context{bg, context.WithValue(bg, ctxKey{}, 1), cctx, context.TODO()} {
			h, err := pool.Call(ctx, p, func(ctx context.Context) (any, error) {
				<-ctx.Done()
				return ctx.Value(ctxKey{}), context.Cause(ctx)
			})
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
		synctest.Wait()
		cctx2, cancel2 := context.WithTimeout(bg, time.Second)
		defer cancel2()
		err := p.Close(cctx2)
		if err == nil || err.Error() != "pool: close: 0 queued tasks abandoned, 4 running tasks cancelled: context deadline exceeded" ||
			!errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close = %v", err)
		}
		for i, h := range hs {
			_, err := h.Wait(bg)
			if !errors.Is(err, pool.ErrClosed) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("task %d ended with cause %v; want ErrClosed wrapping the deadline", i, err)
			}
		}
		if v, _ := hs[1].Wait(bg); v != 1 {
			t.Errorf("value-only context lost its value: %v", v)
		}
	})
}

// A task whose context ended while it was queued is skipped, counted and reported.
func TestExpiredInQueueIsSkipped(t *testing.T) {
	var d drops
	p := pool.New(1, 4, d.hook())
	gate := make(chan struct{})
	var r recorder
	mustSubmit(t, p, bg, waitFor(gate))
	ctx, cancel := context.WithCancelCause(context.WithValue(bg, ctxKey{}, "late"))
	mustSubmit(t, p, ctx, r.task(1))
	h, err := pool.Call(ctx, p, func(context.Context) (int, error) { return 2, nil })
	if err != nil {
		t.Fatal(err)
	}
	mustSubmit(t, p, bg, r.task(3))
	cause := errors.New("too late")
	cancel(cause)
	close(gate)
	if _, err := h.Wait(bg); !errors.Is(err, pool.ErrExpired) || !errors.Is(err, cause) ||
		errors.Is(err, pool.ErrDropped) || err.Error() != "pool: task expired in queue: too late" {
		t.Fatalf("expired handle = %v", err)
	}
	mustClose(t, p)
	if got := r.got(); !slices.Equal(got, []int{3}) {
		t.Fatalf("ran %v; want [3]", got)
	}
	if got := d.got(); !slices.Equal(got, []drop{{pool.Expired, "late"}, {pool.Expired, "late"}}) {
		t.Fatalf("drop hook got %v", got)
	}
	s := p.Stats()
	if s.Skipped != 2 || s.Completed != 2 || s.Dropped.Total() != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkIdentity(t, s)
}

// A submit whose context has already ended is refused with its cause.
func TestSubmitWithDoneContext(t *testing.T) {
	p := pool.New(1, 1)
	defer mustClose(t, p)
	ctx, cancel := context.WithCancelCause(bg)
	cause := errors.New("done already")
	cancel(cause)
	if err := p.Submit(ctx, func(context.Context) error { t.Error("ran"); return nil }); err != cause {
		t.Fatalf("Submit = %v; want %v", err, cause)
	}
	if s := p.Stats(); s.Rejected != 1 || s.Submitted != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// Submit does not allocate in steady state, with the background context or with any context
// the submitter keeps reusing.
func TestSubmitDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	p := pool.New(4, 64)
	defer mustClose(t, p)
	done := make(chan struct{}, 1)
	task := func(context.Context) error { done <- struct{}{}; return nil }
	vctx := context.WithValue(bg, ctxKey{}, 1)
	cctx, cancel := context.WithCancel(vctx)
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"background", bg}, {"value", vctx}, {"cancellable", cctx}} {
		for range 100 { // warm up every worker's context cache
			mustSubmit(t, p, c.ctx, task)
			<-done
		}
		if n := testing.AllocsPerRun(1000, func() {
			_ = p.Submit(c.ctx, task)
			<-done
		}); n != 0 {
			t.Errorf("%s: Submit allocates %v times per task; want 0", c.name, n)
		}
	}
}

// Workers cache the context they derived last; switching between submitters' contexts must
// never hand a task another submitter's values, and a reused context still ends at shutdown.
func TestTaskContextCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 64)
		ctxs := []context.Context{
			context.WithValue(bg, ctxKey{}, "a"),
			context.WithValue(bg, ctxKey{}, "b"),
		}
		var hs []*pool.Handle[any]
		for i := range 20 {
			ctx := ctxs[(i/3)%2] // a a a b b b a a a ...
			h, err := pool.Call(ctx, p, func(ctx context.Context) (any, error) {
				return ctx.Value(ctxKey{}), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
		for i, h := range hs {
			if v, _ := h.Wait(bg); v != ctxs[(i/3)%2].Value(ctxKey{}) {
				t.Fatalf("task %d saw %v", i, v)
			}
		}
		// The worker's cached context for ctxs[1] still ends at shutdown.
		blocked, _ := pool.Call(ctxs[1], p, func(ctx context.Context) (any, error) {
			<-ctx.Done()
			return ctx.Value(ctxKey{}), context.Cause(ctx)
		})
		synctest.Wait()
		dctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		if err := p.Close(dctx); err == nil {
			t.Fatal("Close = nil; want the cancelled task reported")
		}
		if v, err := blocked.Wait(bg); v != "b" || !errors.Is(err, pool.ErrClosed) {
			t.Fatalf("blocked task = %v, %v", v, err)
		}
	})
}

// Without WithTimings, the summaries count tasks but measure no durations.
func TestTimingsOffByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 1)
		mustSubmit(t, p, bg, func(context.Context) error { time.Sleep(time.Second); return nil })
		mustSubmit(t, p, bg, func(context.Context) error { return nil })
		mustClose(t, p)
		s := p.Stats()
		if s.QueueWait != (pool.Summary{Count: 2}) || s.RunTime != (pool.Summary{Count: 2}) {
			t.Fatalf("untimed summaries %+v %+v", s.QueueWait, s.RunTime)
		}
	})
}

// Handle.Wait gives up with the cause of its own context; the task is not affected.
func TestHandleWaitContext(t *testing.T) {
	p := pool.New(1, 1)
	gate := make(chan struct{})
	h, err := pool.Call(bg, p, func(context.Context) (int, error) { <-gate; return 5, nil })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(bg)
	cause := errors.New("stopped waiting")
	cancel(cause)
	if v, err := h.Wait(ctx); v != 0 || err != cause {
		t.Fatalf("Wait = %v, %v; want 0, %v", v, err, cause)
	}
	close(gate)
	if v, err := h.Wait(bg); v != 5 || err != nil {
		t.Fatalf("Wait = %v, %v; want 5, nil", v, err)
	}
	<-h.Done()
	mustClose(t, p)
}
