package pool_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/internal/sample"
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
	if got := d.got(); !slices.Equal(got, []drop{{pool.ReasonExpired, "late"}, {pool.ReasonExpired, "late"}}) {
		t.Fatalf("OnDrop got %v", got)
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

// Without WithTimings, the pool times a sample of its tasks, picked as they are submitted, and
// its distributions hold exactly those tasks' timings: here 300 tasks of 1ms each, in line
// behind one worker, so that the k-th (from 0) waits k ms.
func TestTimingsSampledByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		p := pool.New(1, n)
		for range n {
			mustSubmit(t, p, bg, func(context.Context) error { time.Sleep(time.Millisecond); return nil })
		}
		mustClose(t, p)
		var (
			sampler        sample.Sampler
			picked         uint64
			waits, maxWait time.Duration
		)
		for k := range n {
			if sampler.Take() {
				picked++
				waits += time.Duration(k) * time.Millisecond
				maxWait = time.Duration(k) * time.Millisecond
			}
		}
		if picked < 2 || picked > n/8 {
			t.Fatalf("the sampler picks %d of %d tasks: not a sample", picked, n)
		}
		s := p.Stats()
		if s.Completed != n || s.Wait.Count != picked || s.Run.Count != picked || s.EndToEnd.Count != picked {
			t.Fatalf("completed %d, timings of %d, %d, %d tasks; want %d, and %d each", s.Completed,
				s.Wait.Count, s.Run.Count, s.EndToEnd.Count, n, picked)
		}
		runs := time.Duration(picked) * time.Millisecond
		if s.Wait.Sum != waits || s.Wait.Max != maxWait || s.Run.Sum != runs || s.Run.Max != time.Millisecond ||
			s.EndToEnd.Sum != waits+runs {
			t.Fatalf("wait sum %v max %v, run sum %v max %v, end to end %v; want %v %v, %v 1ms, %v",
				s.Wait.Sum, s.Wait.Max, s.Run.Sum, s.Run.Max, s.EndToEnd.Sum, waits, maxWait, runs, waits+runs)
		}
	})
}

// Tasks that a full pool runs in the submitter's goroutine (CallerRuns) and a Group's tasks
// are sampled as they are submitted, like any other, and timed exactly: here n tasks of 1ms
// each, run inline while the one worker is held, then n through a Group.
func TestTimingsSampledInlineAndGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		sleep := func(context.Context) error { time.Sleep(time.Millisecond); return nil }
		var sampler sample.Sampler
		var picked uint64
		for range 1 + 2*n { // the task that holds the worker, n inline, n in the Group
			if sampler.Take() {
				picked++
			}
		}
		p := pool.New(1, 0, pool.WithOverflow(pool.CallerRuns))
		release := occupy(p)
		for range n {
			mustSubmit(t, p, bg, sleep)
		}
		release()
		g := p.Group(bg)
		for range n {
			g.Go(sleep)
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		mustClose(t, p)
		s := p.Stats()
		// The first task, which held the worker while the n inline ones ran, is picked: it
		// ran n ms; every other picked task ran 1ms.
		runs := time.Duration(n)*time.Millisecond + time.Duration(picked-1)*time.Millisecond
		if s.Completed != 1+2*n || s.Inline < n || s.Run.Count != picked || s.Wait.Count != picked ||
			s.Run.Sum != runs || s.Run.Max != n*time.Millisecond {
			t.Fatalf("completed %d (%d inline), runs timed %d (waits %d), sum %v, max %v; want %d (>= %d), %d, %v, %v",
				s.Completed, s.Inline, s.Run.Count, s.Wait.Count, s.Run.Sum, s.Run.Max, 1+2*n, n, picked, runs,
				n*time.Millisecond)
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
		if got := d.got(); len(got) != 1 || got[0] != (drop{pool.ReasonExpired, "a"}) {
			t.Fatalf("drops %v", got)
		}
		checkIdentity(t, s)
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
