package scope_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/scope"
)

// failAt returns a task that sleeps d (virtual time), then returns err.
func failAt(d time.Duration, err error) func(context.Context) error {
	return func(context.Context) error { time.Sleep(d); return err }
}

// taskErr asserts that f is a *scope.TaskError of the named task wrapping want.
func taskErr(t *testing.T, f error, name string, want error) {
	t.Helper()
	var te *scope.TaskError
	if !errors.As(f, &te) || f != error(te) {
		t.Fatalf("failure %v (%T) is not a *scope.TaskError", f, f)
	}
	equal(t, name, te.Name)
	same(t, want, te.Err)
}

// Errors lists every failure of a Supervise scope once, in the order they happened, whether
// there are none, one or two.
func TestErrorsListsEveryFailureOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := func(failures ...error) error {
			return scope.Run(t.Context(), func(s *scope.Scope) error {
				s.GoNamed("ok", failAt(time.Second, nil))
				for i, err := range failures {
					s.GoNamed(string(rune('a'+i)), failAt(time.Duration(len(failures)-i)*time.Second, err))
				}
				return nil
			}, scope.WithJoiner(scope.Supervise))
		}
		equal(t, []error(nil), scope.Errors(run()), "no failure")

		err := run(errA)
		list := scope.Errors(err)
		equal(t, 1, len(list), "one failure")
		same(t, err, list[0], "a single failure is Run's error itself")
		taskErr(t, list[0], "a", errA)

		list = scope.Errors(run(errA, errB)) // b fails first (1s), then a (2s)
		equal(t, 2, len(list), "two failures")
		taskErr(t, list[0], "b", errB)
		taskErr(t, list[1], "a", errA)
	})
}

// The body's error, the cancellation from outside and panics returned as errors are
// failures too, each listed once; a body error that is itself a join stays one failure.
func TestErrorsListsBodyCauseAndPanics(t *testing.T) {
	joined := errors.Join(errA, errB)
	err := scope.Run(context.Background(), func(*scope.Scope) error { return joined })
	list := scope.Errors(err)
	equal(t, 1, len(list), "the body's joined error is one failure")
	same(t, error(joined), list[0])

	synctest.Test(t, func(t *testing.T) {
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.GoNamed("fails", failAt(time.Second, errA))
			s.GoNamed("panics", func(context.Context) error { time.Sleep(2 * time.Second); panic("boom") })
			s.GoNamed("slow", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
			return errB
		}, scope.WithJoiner(scope.Supervise), scope.WithPanicsAsErrors(), scope.WithTimeout(3*time.Second))
		list := scope.Errors(err)
		// The body's error cancelled the scope: it comes first, then the task failures as
		// they happened. The slow task's ctx.Err() is an echo, not a failure.
		equal(t, 3, len(list), "%v", list)
		same(t, errB, list[0], "the body's error")
		taskErr(t, list[1], "fails", errA)
		var pe *scope.PanicError
		isTrue(t, errors.As(list[2], &pe) && list[2] == error(pe), "a panic returned as a *PanicError: %v", list[2])
		equal(t, "panics", pe.Name)
		equal(t, any("boom"), pe.Value)
	})

	synctest.Test(t, func(t *testing.T) {
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.GoNamed("fails", func(ctx context.Context) error { <-ctx.Done(); return errA })
			return nil
		}, scope.WithTimeout(time.Second))
		list := scope.Errors(err)
		equal(t, 2, len(list), "%v", list)
		errIs(t, list[0], scope.ErrTimeout, "the cancellation from outside comes first")
		taskErr(t, list[1], "fails", errA)
	})
}

// For the *PanicError that Run panicked with, Errors lists that panic alone, then each
// failure it carries, once.
func TestErrorsOfARaisedPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := mustPanic(t, func() {
			_ = scope.Run(t.Context(), func(s *scope.Scope) error {
				s.GoNamed("first", func(context.Context) error { time.Sleep(time.Second); panic("first boom") })
				s.GoNamed("second", func(context.Context) error { time.Sleep(time.Second); panic("second boom") })
				s.GoNamed("fails", failAt(time.Second/2, errA))
				return nil
			}, scope.WithJoiner(scope.Supervise))
		})
		pe, ok := v.(*scope.PanicError)
		isTrue(t, ok, "Run panicked with %T", v)
		list := scope.Errors(pe)
		equal(t, 3, len(list), "%v", list)
		first, ok := list[0].(*scope.PanicError)
		isTrue(t, ok, "first element %T", list[0])
		equal(t, pe.Name, first.Name)
		equal(t, pe.Index, first.Index)
		equal(t, pe.Value, first.Value)
		equal(t, pe.Stack, first.Stack)
		isTrue(t, !strings.Contains(first.Error(), "a failed"), "the first element carries none of the others: %v", first)
		notErrIs(t, first, errA, "the first element carries none of the others")
		// The other panic and the failure, each once.
		var names []string
		for _, f := range list[1:] {
			switch f := f.(type) {
			case *scope.PanicError:
				names = append(names, f.Name)
			case *scope.TaskError:
				names = append(names, f.Name)
				same(t, errA, f.Err)
			default:
				t.Fatalf("unexpected element %T %v", f, f)
			}
		}
		equal(t, 2, len(names))
		isTrue(t, names[0] != names[1] && names[0] != pe.Name && names[1] != pe.Name, "names %v, raised %s", names, pe.Name)
		equal(t, 1, len(scope.Errors(first)), "a panic that carries nothing is a list of one")
	})
}

// Errors works on what Map returns and on what MapSeq yields last.
func TestErrorsOfMapAndMapSeq(t *testing.T) {
	f := func(_ context.Context, v int) (int, error) {
		if v%2 == 1 {
			return 0, errA
		}
		return v, nil
	}
	_, err := scope.Map(context.Background(), []int{1, 2, 3}, f, scope.WithJoiner(scope.Supervise))
	list := scope.Errors(err)
	equal(t, 2, len(list), "%v", list)
	for _, e := range list {
		errIs(t, e, errA)
	}
	var last error
	for _, err := range scope.MapSeq(context.Background(), func(yield func(int) bool) { yield(1) }, f) {
		last = err
	}
	list = scope.Errors(last)
	equal(t, 1, len(list), "%v", list)
	taskErr(t, list[0], "", errA)
	equal(t, []error(nil), scope.Errors(nil))
}
