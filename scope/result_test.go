package scope_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/scope"
)

func TestSpawnHandle(t *testing.T) {
	var skipped *scope.Handle[int]
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		a := scope.Spawn(s, func(ctx context.Context) (int, error) { return 40, nil })
		b := scope.Spawn(s, func(ctx context.Context) (int, error) {
			v, err := a.Wait(context.Background()) // a task may wait on another's handle
			return v + 2, err
		})
		v, err := b.Wait(context.Background())
		noErr(t, err)
		equal(t, 42, v)
		f := scope.Spawn(s, func(ctx context.Context) (int, error) { return 1, errA })
		_, err = f.Wait(context.Background())
		same(t, errA, err, "Wait returns the task's own error")
		<-f.Done()
		skipped = scope.Spawn(s, func(ctx context.Context) (int, error) { return 5, nil })
		return nil
	})
	errIs(t, err, errA)
	v, werr := skipped.Wait(context.Background()) // either ran before the cancel or was skipped; never blocks
	if werr == nil {
		equal(t, 5, v)
	} else {
		errIs(t, werr, errA, "a skipped task's handle gives the scope's cause")
	}
}

func TestSpawnHandlePanic(t *testing.T) {
	var h *scope.Handle[int]
	_, err := recoverRun(func(s *scope.Scope) error {
		h = scope.Spawn(s, func(ctx context.Context) (int, error) { panic("p") })
		_, err := h.Wait(context.Background())
		var pe *scope.PanicError
		errAs(t, err, &pe)
		return nil
	}, scope.WithPanicsAsErrors())
	var pe *scope.PanicError
	errAs(t, err, &pe)
}

func TestMapOrderedAndBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := []int{5, 1, 4, 2, 3, 6}
		var g gauge
		start := time.Now()
		out, err := scope.Map(t.Context(), in, func(ctx context.Context, v int) (string, error) {
			g.enter()
			defer g.leave()
			time.Sleep(time.Duration(v) * time.Second) // later inputs finish first
			return strconv.Itoa(v * 10), nil
		}, scope.WithLimit(2))
		noErr(t, err)
		equal(t, []string{"50", "10", "40", "20", "30", "60"}, out)
		equal(t, int32(2), g.max.Load())
		// Two slots, in input order: 5 and 1 at 0s; 4 at 1s; 2 and 3 at 5s; 6 at 7s, ends at 13s.
		equal(t, 13*time.Second, time.Since(start))
	})
}

func TestMapFailFast(t *testing.T) {
	var calls atomic.Int32
	out, err := scope.Map(t.Context(), []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, func(ctx context.Context, v int) (int, error) {
		calls.Add(1)
		if v == 2 {
			return -1, errA
		}
		return v, nil
	}, scope.WithLimit(1))
	errIs(t, err, errA)
	var te *scope.TaskError
	errAs(t, err, &te)
	equal(t, 2, te.Index, "the index of the failed element")
	equal(t, int32(3), calls.Load(), "no call after the failure")
	equal(t, []int{0, 1, -1, 0, 0, 0, 0, 0, 0, 0}, out)
}

// countingSeq yields 0..n-1 and records how many it produced and whether it was stopped.
func countingSeq(n int, produced *atomic.Int32, stopped *atomic.Bool) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			produced.Add(1)
			if !yield(i) {
				stopped.Store(true)
				return
			}
		}
	}
}

func TestMapSeqOrdered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var produced atomic.Int32
		var stopped atomic.Bool
		var g gauge
		var got []int
		for v, err := range scope.MapSeq(t.Context(), countingSeq(20, &produced, &stopped), func(ctx context.Context, v int) (int, error) {
			g.enter()
			defer g.leave()
			time.Sleep(time.Duration(20-v) * time.Millisecond)
			return v * v, nil
		}, scope.WithLimit(4)) {
			noErr(t, err)
			got = append(got, v)
		}
		want := make([]int, 20)
		for i := range want {
			want[i] = i * i
		}
		equal(t, want, got)
		equal(t, int32(4), g.max.Load())
	})
}

func TestMapSeqBreakJoinsEveryWorker(t *testing.T) {
	// conc#137: breaking out of the loop must not leak workers or leave calls running.
	synctest.Test(t, func(t *testing.T) {
		var produced atomic.Int32
		var stopped atomic.Bool
		var running atomic.Int32
		var causes atomic.Int32
		// The first three calls end only once call 3 has started: a call that ended at
		// once could be yielded before the next one was started, and the loop could break
		// with no later call started (1 run in 75 with -race).
		started3 := make(chan struct{})
		n := 0
		for v, err := range scope.MapSeq(t.Context(), countingSeq(1000, &produced, &stopped), func(ctx context.Context, v int) (int, error) {
			running.Add(1)
			defer running.Add(-1)
			if v < 3 {
				<-started3
			}
			if v == 3 {
				close(started3)
			}
			if v >= 3 { // later calls wait until the consumer has broken out
				<-ctx.Done()
				if context.Cause(ctx).Error() == "scope: consumer stopped" {
					causes.Add(1)
				}
				return 0, ctx.Err()
			}
			return v, nil
		}, scope.WithLimit(4)) {
			noErr(t, err)
			equal(t, n, v)
			n++
			if n == 3 {
				synctest.Wait() // the later calls have started and wait on ctx
				break
			}
		}
		// Nothing runs any more, right as the range statement ends.
		equal(t, int32(0), running.Load(), "calls still running after the loop")
		isTrue(t, stopped.Load(), "input sequence not stopped")
		// The input is read only to fill the window: 3 consumed, at most 4-1 others in it.
		isTrue(t, produced.Load() <= 3+4-1, "read %d inputs ahead of a consumer that took 3", produced.Load())
		isTrue(t, causes.Load() >= 1, "waiting calls saw the consumer's stop as cause")
	})
}

func TestMapSeqBreakDoesNotWaitForInput(t *testing.T) {
	// An input that blocks between elements, deaf to ctx, must not hold up the range statement
	// after a break: the consumer's goroutine pulls it, so nothing is inside it then.
	synctest.Test(t, func(t *testing.T) {
		late := make(chan struct{})
		go func() { time.Sleep(time.Hour); close(late) }() // the second element comes an hour later
		inReturned := false
		in := func(yield func(int) bool) {
			defer func() { inReturned = true }()
			if !yield(1) {
				return
			}
			<-late
			yield(2)
		}
		start := time.Now()
		for v, err := range scope.MapSeq(t.Context(), in, func(ctx context.Context, v int) (int, error) { return v * 10, nil }, scope.WithLimit(1)) {
			noErr(t, err)
			equal(t, 10, v)
			break
		}
		equal(t, time.Duration(0), time.Since(start), "the range statement waited for the input's next element")
		isTrue(t, inReturned, "the input was not stopped when the range statement ended")
		<-late // let the hour pass, so the bubble ends with no goroutine left
	})
}

func TestMapSeqFailureEndsWithTheError(t *testing.T) {
	var got []int
	var errs []error
	for v, err := range scope.MapSeq(t.Context(), slices.Values([]int{0, 1, 2, 3, 4}), func(ctx context.Context, v int) (int, error) {
		if v == 3 {
			return 0, errA
		}
		return v, nil
	}, scope.WithLimit(1)) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got = append(got, v)
	}
	equal(t, []int{0, 1, 2}, got)
	equal(t, 1, len(errs))
	errIs(t, errs[0], errA)
}

func TestMapSeqParentCancelDeliversComputedResults(t *testing.T) {
	// Every call has returned when the parent is cancelled: the computed results are yielded,
	// not dropped, and nothing was cut short, so there is no error.
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		exhausted := make(chan struct{})
		in := func(yield func(int) bool) {
			for _, v := range []int{1, 2, 3} {
				if !yield(v) {
					return
				}
			}
			close(exhausted)
		}
		var got []int
		var errs []error
		for v, err := range scope.MapSeq(ctx, in, func(ctx context.Context, v int) (int, error) {
			if v == 1 {
				<-exhausted // the whole input is in the window before the first result
			}
			return v, nil
		}, scope.WithLimit(4)) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			got = append(got, v)
			if len(got) == 1 {
				synctest.Wait() // every call has returned
				cancel()
			}
		}
		equal(t, []int{1, 2, 3}, got)
		equal(t, 0, len(errs), "errors %v", errs)
	})
}

func TestMapSeqParentCancelEndsWithTheCause(t *testing.T) {
	// The parent is cancelled while the input has more: every call that ran is delivered, in
	// order, then the cancellation cause says that the sequence was cut short.
	synctest.Test(t, func(t *testing.T) {
		errShutdown := errors.New("shutdown")
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		var calls atomic.Int32
		var got []int
		var errs []error
		for v, err := range scope.MapSeq(ctx, slices.Values([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), func(ctx context.Context, v int) (int, error) {
			calls.Add(1)
			return v * 10, nil // ignores ctx: a call that started finishes
		}, scope.WithLimit(2)) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			isTrue(t, len(errs) == 0, "a result after the error")
			got = append(got, v)
			if len(got) == 1 {
				synctest.Wait() // the calls started so far have returned
				cancel(errShutdown)
			}
		}
		n := int(calls.Load())
		isTrue(t, n < 10, "%d calls: the input was read after the cancel", n)
		want := make([]int, n)
		for i := range want {
			want[i] = i * 10
		}
		equal(t, want, got, "every call that ran is delivered")
		equal(t, 1, len(errs))
		same(t, errShutdown, errs[0])
	})
}

// ignoreFailures is a Joiner that neither cancels nor reports on a failure.
type ignoreFailures struct{}

func (ignoreFailures) Decide(error) (cancel, report bool) { return false, false }

func TestMapSeqStopsAtTheFirstFailure(t *testing.T) {
	for _, p := range []func() scope.Joiner{scope.Supervise, func() scope.Joiner { return ignoreFailures{} }} {
		var calls atomic.Int32
		var got []int
		var errs []error
		for v, err := range scope.MapSeq(t.Context(), slices.Values([]int{0, 1, 2, 3, 4}), func(ctx context.Context, v int) (int, error) {
			calls.Add(1)
			if v == 2 {
				return 0, errA
			}
			return v, nil
		}, scope.WithLimit(1), scope.WithJoiner(p)) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			got = append(got, v)
		}
		equal(t, []int{0, 1}, got, "%T", p())
		equal(t, int32(3), calls.Load(), "%T: the input is not read past the failure", p())
		equal(t, 1, len(errs), "%T", p())
		errIs(t, errs[0], errA, "%T", p())
	}
}

func TestMapSeqInputPanicJoins(t *testing.T) {
	// The input runs on the consumer's side (iter.Pull): its panic reaches the consumer, after
	// the calls in the window have been cancelled and have returned.
	var running atomic.Int32
	in := func(yield func(int) bool) {
		for i := range 3 {
			if !yield(i) {
				return
			}
		}
		panic("input")
	}
	v := func() (v any) {
		defer func() { v = recover() }()
		for range scope.MapSeq(t.Context(), in, func(ctx context.Context, v int) (int, error) {
			running.Add(1)
			defer running.Add(-1)
			<-ctx.Done() // returns only once the scope is cancelled
			return v, nil
		}, scope.WithLimit(4)) {
			t.Error("a call returned before the scope was cancelled")
		}
		return nil
	}()
	equal(t, any("input"), v)
	equal(t, int32(0), running.Load())
}

func TestMapSeqPanicInLoopBodyJoins(t *testing.T) {
	var running atomic.Int32
	v := func() (v any) {
		defer func() { v = recover() }()
		for range scope.MapSeq(t.Context(), slices.Values([]int{0, 1, 2, 3, 4, 5}), func(ctx context.Context, v int) (int, error) {
			running.Add(1)
			defer running.Add(-1)
			if v > 0 {
				<-ctx.Done()
			}
			return v, nil
		}, scope.WithLimit(3)) {
			panic("consumer")
		}
		return nil
	}()
	equal(t, any("consumer"), v)
	equal(t, int32(0), running.Load())
}

// Wait(ctx) returns when the waiter's ctx ends, with its cause, while the task goes on: the
// scope still owns it, and Run joins it.
func TestHandleWaitReturnsWhenCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		errWaitedEnough := errors.New("waited enough")
		var waited time.Duration
		var v int
		var werr error
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			h := scope.Spawn(s, func(context.Context) (int, error) {
				time.Sleep(time.Hour) // does not watch its ctx
				return 7, nil
			})
			ctx, cancel := context.WithTimeoutCause(t.Context(), time.Second, errWaitedEnough)
			defer cancel()
			v, werr = h.Wait(ctx)
			waited = time.Since(start)
			got, err := h.Wait(t.Context()) // a waiter that does not give up gets the value
			equal(t, 7, got)
			return err
		})
		noErr(t, err)
		equal(t, 0, v, "the zero value")
		same(t, errWaitedEnough, werr, "the waiter's cause")
		equal(t, time.Second, waited, "Wait returned as its ctx ended")
		equal(t, time.Hour, time.Since(start), "Run joined the task")
		// A done ctx does not hide a result that is ready.
		err = scope.Run(t.Context(), func(s *scope.Scope) error {
			h := scope.Spawn(s, func(context.Context) (int, error) { return 3, nil })
			<-h.Done()
			done, cancel := context.WithCancel(t.Context())
			cancel()
			got, err := h.Wait(done)
			equal(t, 3, got)
			return err
		})
		noErr(t, err)
	})
}
