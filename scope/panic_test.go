package scope_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/corral-go/corral/scope"
)

// recoverRun runs Run and returns the value it panicked with (nil if it returned) and its error.
func recoverRun(body func(*scope.Scope) error, opts ...scope.Option) (v any, err error) {
	defer func() { v = recover() }()
	err = scope.Run(context.Background(), body, opts...)
	return nil, err
}

func panickingHelper() { panic("kaboom") }

func TestPanicReraisedAfterJoinWithStack(t *testing.T) {
	var siblingDone atomic.Bool
	var cause error
	v, _ := recoverRun(func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error {
			<-ctx.Done() // the panic cancels the scope
			cause = context.Cause(ctx)
			siblingDone.Store(true)
			return ctx.Err()
		})
		s.GoNamed("exploder", func(ctx context.Context) error { panickingHelper(); return nil })
		return nil
	})
	pe, ok := v.(*scope.PanicError)
	isTrue(t, ok, "panic value is %T, want *scope.PanicError", v)
	isTrue(t, siblingDone.Load(), "re-raised before every task returned")
	equal(t, any("kaboom"), pe.Value)
	equal(t, "exploder", pe.Name)
	equal(t, 1, pe.Index)
	isTrue(t, strings.Contains(string(pe.Stack), "panickingHelper"), "stack lacks the panic site:\n%s", pe.Stack)
	same(t, error(pe), cause, "the cause the sibling saw")
	isTrue(t, strings.HasPrefix(pe.Error(), `scope: task "exploder" panicked: kaboom`), pe.Error())
}

func TestEveryPanicKept(t *testing.T) {
	errVal := errors.New("panic with an error")
	v, _ := recoverRun(func(s *scope.Scope) error {
		ready := make(chan struct{})
		for i := range 3 {
			s.Go(func(ctx context.Context) error {
				ready <- struct{}{}
				<-ctx.Done()
				if i == 0 {
					panic(errVal)
				}
				if i == 1 {
					return errB // a failure alongside the panics: kept too
				}
				panic("second")
			})
		}
		for range 3 {
			<-ready
		}
		s.Go(func(ctx context.Context) error { panic("first") })
		return nil
	})
	pe := v.(*scope.PanicError)
	equal(t, any("first"), pe.Value, "the first panic is re-raised")
	errIs(t, pe, errVal, "a later panic's error value")
	errIs(t, pe, errB, "a failure in the same scope")
	msg := pe.Error()
	for _, want := range []string{"panicked: first", "panicked: panic with an error", "panicked: second", "failed: b failed"} {
		isTrue(t, strings.Contains(msg, want), "message lacks %q:\n%s", want, msg)
	}
	var n int
	for _, e := range pe.Unwrap() {
		if _, ok := e.(*scope.PanicError); ok {
			n++
		}
	}
	equal(t, 2, n, "other panics carried")
}

func TestWithPanicsAsErrors(t *testing.T) {
	v, err := recoverRun(func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error { panic("boom") })
		s.Go(func(ctx context.Context) error { return errA })
		return nil
	}, scope.WithPanicsAsErrors(), scope.WithJoiner(scope.Supervise))
	equal(t, nil, v)
	var pe *scope.PanicError
	errAs(t, err, &pe)
	equal(t, any("boom"), pe.Value)
	errIs(t, err, errA)
	equal(t, 2, len(unwrapAll(err)))
}

func TestGoexitIsAFailure(t *testing.T) {
	for _, opts := range [][]scope.Option{nil, {scope.WithLimit(1)}} {
		var ran atomic.Int32
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.GoNamed("quitter", func(ctx context.Context) error {
				runtime.Goexit() // what t.FailNow does
				return nil
			})
			return nil
		}, opts...)
		errIs(t, err, scope.ErrGoexit)
		errMsg(t, err, `scope: task "quitter" called runtime.Goexit`)
		// A bounded scope replaces the worker the Goexit ended.
		err = scope.Run(t.Context(), func(s *scope.Scope) error {
			for range 3 {
				s.Go(func(ctx context.Context) error { runtime.Goexit(); return nil })
			}
			for range 3 {
				s.Go(func(ctx context.Context) error { ran.Add(1); return nil })
			}
			return nil
		}, append(opts, scope.WithJoiner(scope.Supervise))...)
		equal(t, 3, len(unwrapAll(err)))
		equal(t, int32(3), ran.Load())
	}
}

func TestBodyPanicJoinsTasksFirst(t *testing.T) {
	var done atomic.Bool
	var cause error
	v, _ := recoverRun(func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			done.Store(true)
			return nil
		})
		panic("body")
	})
	equal(t, any("body"), v, "the body's panic goes on unchanged")
	isTrue(t, done.Load(), "task still running when the body's panic left Run")
	errMsg(t, cause, "scope: body panicked or called runtime.Goexit")
}

func TestBodyPanicWithTaskPanicKeepsBoth(t *testing.T) {
	// With WithPanicsAsErrors too: a task's panic is a failure then, and the body's panic used to
	// go on alone, dropping it.
	for _, opts := range [][]scope.Option{nil, {scope.WithPanicsAsErrors()}, {scope.WithPanicsAsErrors(), scope.WithJoiner(scope.Supervise)}} {
		v, _ := recoverRun(func(s *scope.Scope) error {
			gate := make(chan struct{}) // both start before either can cancel the scope
			done := make(chan struct{}, 2)
			s.Go(func(ctx context.Context) error { <-gate; done <- struct{}{}; return errA })
			s.Go(func(ctx context.Context) error { <-gate; done <- struct{}{}; panic("task") })
			close(gate)
			<-done
			<-done
			panic("body")
		}, opts...)
		pe, ok := v.(*scope.PanicError)
		isTrue(t, ok, "opts %d: panic value %T %v", len(opts), v, v)
		equal(t, any("task"), pe.Value)
		isTrue(t, strings.Contains(pe.Error(), `task "body" panicked: body`), pe.Error())
		var body *scope.PanicError
		for _, e := range pe.Unwrap() {
			if b, ok := e.(*scope.PanicError); ok && b.Name == "body" {
				body = b
			}
		}
		isTrue(t, body != nil && body.Index == -1 && body.Value == "body", "the body's panic is carried")
		errIs(t, pe, errA, "opts %d: the task failure is carried", len(opts))
	}
}

func TestBodyGoexitJoinsTasksFirst(t *testing.T) {
	var taskDone atomic.Bool
	var joined atomic.Bool
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		defer func() { joined.Store(taskDone.Load()) }()
		_ = scope.Run(context.Background(), func(s *scope.Scope) error {
			s.Go(func(ctx context.Context) error {
				<-ctx.Done()
				taskDone.Store(true)
				return nil
			})
			runtime.Goexit() // as t.FailNow in a body would
			return nil
		})
		t.Error("Run returned after its body called runtime.Goexit")
	}()
	<-exited
	isTrue(t, joined.Load(), "the task was still running when the Goexit left Run")
}
