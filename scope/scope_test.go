package scope_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/scope"
)

var (
	errA = errors.New("a failed")
	errB = errors.New("b failed")
	errC = errors.New("c failed")
)

// mustPanic runs f and returns the message of its panic, failing the test if it did not panic.
func mustPanic(t *testing.T, f func()) (v any) {
	t.Helper()
	defer func() {
		v = recover()
		if v == nil {
			t.Fatal("did not panic")
		}
	}()
	f()
	return nil
}

func TestRunJoinsEveryTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var done atomic.Int32
		start := time.Now()
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			for i := range 10 {
				s.Go(func(ctx context.Context) error {
					time.Sleep(time.Duration(i+1) * time.Second)
					s.Go(func(ctx context.Context) error { // tasks may start tasks
						time.Sleep(time.Second)
						done.Add(1)
						return nil
					})
					done.Add(1)
					return nil
				})
			}
			return nil
		})
		noErr(t, err)
		equal(t, int32(20), done.Load(), "Run returned before every task had returned")
		equal(t, 11*time.Second, time.Since(start))
	})
}

func TestGoAfterRunPanics(t *testing.T) {
	for _, opts := range [][]scope.Option{nil, {scope.WithLimit(2)}} {
		var saved *scope.Scope
		noErr(t, scope.Run(t.Context(), func(s *scope.Scope) error {
			saved = s
			s.Go(func(context.Context) error { return nil }) // a bounded scope has a worker
			return nil
		}, opts...))
		nop := func(context.Context) error { return nil }
		for name, f := range map[string]func(){
			"Go":      func() { saved.Go(nop) },
			"GoNamed": func() { saved.GoNamed("x", nop) },
			"TryGo":   func() { saved.TryGo(nop) },
			"Spawn":   func() { scope.Spawn(saved, func(context.Context) (int, error) { return 0, nil }) },
		} {
			v := mustPanic(t, f)
			equal(t, "scope: task started after Run returned", v, "%s, %d options", name, len(opts))
		}
	}
}

func TestFailFastCauseNamesTheTask(t *testing.T) {
	var cause error
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		gate := make(chan struct{})
		s.Go(func(ctx context.Context) error {
			close(gate)
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err() // an echo: not reported
		})
		<-gate
		s.Go(func(ctx context.Context) error { return errA })
		return nil
	})
	var te *scope.TaskError
	errAs(t, cause, &te)
	equal(t, 1, te.Index)
	equal(t, "", te.Name)
	errIs(t, cause, errA)
	errMsg(t, cause, "scope: task #1 failed: a failed")
	same(t, cause, err, "Run returns the root cause alone: the echo is not reported")
}

func TestFailFastCauseUsesTheName(t *testing.T) {
	var cause error
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return context.Cause(ctx) // returning the cause is an echo too
		})
		s.GoNamed("fetch", func(ctx context.Context) error { return errA })
		return nil
	})
	errMsg(t, cause, `scope: task "fetch" failed: a failed`)
	same(t, cause, err)
	var te *scope.TaskError
	errAs(t, err, &te)
	equal(t, "fetch", te.Name)
	equal(t, 1, te.Index)
}

func TestParentCancelCause(t *testing.T) {
	errShutdown := errors.New("shutdown")
	ctx, cancel := context.WithCancelCause(t.Context())
	var cause error
	err := scope.Run(ctx, func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		})
		cancel(errShutdown)
		return nil
	})
	same(t, errShutdown, cause)
	same(t, errShutdown, err, "the parent's cause is the root cause, the echo is not reported")
}

func TestParentCancelWithoutEffectIsNotAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	err := scope.Run(ctx, func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error { return nil })
		return nil
	})
	cancel()
	noErr(t, err)
}

func TestNoStartsAfterCancel(t *testing.T) {
	var ran atomic.Int32
	var saved *scope.Scope
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		saved = s
		done := make(chan struct{})
		s.Go(func(ctx context.Context) error { <-ctx.Done(); close(done); return ctx.Err() })
		s.Go(func(ctx context.Context) error { return errA })
		<-done // the scope is cancelled
		for range 5 {
			s.Go(func(ctx context.Context) error { ran.Add(1); return nil })
		}
		isTrue(t, !s.TryGo(func(ctx context.Context) error { ran.Add(1); return nil }))
		return nil
	})
	errIs(t, err, errA)
	equal(t, int32(0), ran.Load())
	equal(t, 6, saved.Skipped())
}

func TestParentAlreadyCancelledStartsNothing(t *testing.T) {
	// golang/go#61611 and conc#107: errgroup and conc start these tasks.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var ran atomic.Int32
	var sc *scope.Scope
	err := scope.Run(ctx, func(s *scope.Scope) error {
		sc = s
		for range 3 {
			s.Go(func(ctx context.Context) error { ran.Add(1); return nil })
		}
		return nil
	}, scope.WithLimit(1))
	errIs(t, err, context.Canceled)
	equal(t, int32(0), ran.Load())
	equal(t, 3, sc.Skipped(), "final once Run returned")
}

func TestErrorsRootFirstAndEveryFailure(t *testing.T) {
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		started := make(chan struct{})
		for _, e := range []error{errB, errC} {
			s.Go(func(ctx context.Context) error {
				started <- struct{}{}
				<-ctx.Done()
				return e // a real error, returned after the cancellation: reported
			})
		}
		s.Go(func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err() // echo: not reported
		})
		<-started
		<-started
		s.Go(func(ctx context.Context) error { return errA })
		return nil
	})
	errIs(t, err, errA)
	errIs(t, err, errB)
	errIs(t, err, errC)
	notErrIs(t, err, context.Canceled)
	errs := unwrapAll(err)
	equal(t, 3, len(errs))
	errIs(t, errs[0], errA, "root cause first")
	var te *scope.TaskError
	errAs(t, errs[0], &te)
	equal(t, 3, te.Index)
}

func TestBodyErrorCancelsTasks(t *testing.T) {
	var cause error
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		})
		return errA
	})
	same(t, errA, err, "the body's error is returned unchanged")
	errIs(t, cause, errA)
	errMsg(t, cause, "scope: body failed: a failed")
}

func TestBadInputPanics(t *testing.T) {
	cases := map[string]func(){
		"nil task": func() {
			_ = scope.Run(t.Context(), func(s *scope.Scope) error { s.Go(nil); return nil })
		},
		"nil named task": func() {
			_ = scope.Run(t.Context(), func(s *scope.Scope) error { s.GoNamed("x", nil); return nil })
		},
		"nil try task": func() {
			_ = scope.Run(t.Context(), func(s *scope.Scope) error { s.TryGo(nil); return nil })
		},
		"nil body":       func() { _ = scope.Run(t.Context(), nil) },
		"nil context":    func() { var ctx context.Context; _ = scope.Run(ctx, func(*scope.Scope) error { return nil }) },
		"negative limit": func() { scope.WithLimit(-1) },
		"nil Joiner":     func() { scope.WithJoiner(nil) },
		"nil Joiner made": func() {
			_ = scope.Run(t.Context(), func(*scope.Scope) error { return nil }, scope.WithJoiner(func() scope.Joiner { return nil }))
		},
		"nil option": func() {
			_ = scope.Run(t.Context(), func(*scope.Scope) error { return nil }, nil)
		},
		"nil stuck report": func() { scope.WithStuckReport(time.Second, nil) },
		"First with no tasks": func() {
			_, _ = scope.First[int](t.Context(), nil)
		},
	}
	for name, f := range cases {
		v := mustPanic(t, f)
		msg, ok := v.(string)
		isTrue(t, ok, "%s: panic value %T", name, v)
		isTrue(t, strings.HasPrefix(msg, "scope: "), "%s: %q", name, msg)
	}
}

// A scope cancelled without a failure gives its tasks a cause that matches context.Canceled,
// as errgroup's does, and says why (issue 14, item 6): after a clean Run, after a Joiner
// completed the scope on a success, after a MapSeq consumer stopped.
func TestCauseWithoutFailureIsCanceled(t *testing.T) {
	var taskCtx context.Context
	noErr(t, scope.Run(t.Context(), func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error { taskCtx = ctx; return nil })
		return nil
	}))
	cause := context.Cause(taskCtx)
	errIs(t, cause, context.Canceled, "after a clean Run")
	errMsg(t, cause, "scope: Run returned")

	_, _ = scope.First(t.Context(), []func(context.Context) (int, error){
		func(ctx context.Context) (int, error) { <-ctx.Done(); cause = context.Cause(ctx); return 0, ctx.Err() },
		func(ctx context.Context) (int, error) { return 1, nil },
	})
	errIs(t, cause, context.Canceled, "after the Joiner completed the scope")
	errMsg(t, cause, "scope: completed by task #1")

	started := make(chan struct{})
	seq := scope.MapSeq(t.Context(), slices.Values([]int{1, 2}), func(ctx context.Context, v int) (int, error) {
		if v == 1 {
			<-started // 1 is yielded only once 2 runs
			return v, nil
		}
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return v, nil
	}, scope.WithLimit(2))
	for range seq {
		break
	}
	errIs(t, cause, context.Canceled, "after the consumer stopped")
	errMsg(t, cause, "scope: consumer stopped")
}
