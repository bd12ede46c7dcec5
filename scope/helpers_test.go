package scope_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-go/corral/scope"
)

// The tests use these few assertions rather than a library: the module's go.sum covers only
// goleak among test dependencies in practice.

func msg(args []any) string {
	if len(args) == 0 {
		return ""
	}
	if f, ok := args[0].(string); ok {
		return ": " + fmt.Sprintf(f, args[1:]...)
	}
	return ": " + fmt.Sprint(args...)
}

func noErr(t testing.TB, err error, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error %v%s", err, msg(args))
	}
}

func equal[T any](t testing.TB, want, got T, args ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("got %#v, want %#v%s", got, want, msg(args))
	}
}

func same(t testing.TB, want, got any, args ...any) {
	t.Helper()
	if want != got {
		t.Fatalf("got %v (%T), want the very value %v (%T)%s", got, got, want, want, msg(args))
	}
}

func errIs(t testing.TB, err, target error, args ...any) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v does not match %v%s", err, target, msg(args))
	}
}

func notErrIs(t testing.TB, err, target error, args ...any) {
	t.Helper()
	if errors.Is(err, target) {
		t.Fatalf("error %v matches %v%s", err, target, msg(args))
	}
}

func errAs(t testing.TB, err error, target any, args ...any) {
	t.Helper()
	if !errors.As(err, target) {
		t.Fatalf("error %v has no %T%s", err, target, msg(args))
	}
}

func errMsg(t testing.TB, err error, want string, args ...any) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q%s", err, want, msg(args))
	}
}

func isTrue(t testing.TB, ok bool, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf("false%s", msg(args))
	}
}

// unwrapAll returns the errors joined in err (or err alone).
func unwrapAll(err error) []error {
	if _, ok := err.(*scope.PanicError); ok {
		return []error{err} // its Unwrap lists what it carries, not a join
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// outsidePanic asserts that v, what Run panicked with, is the *scope.PanicError of a panic that
// is not a task's (Index -1) with that name and value, whose stack shows frame, and returns it.
func outsidePanic(t testing.TB, v any, name string, value any, frame string) *scope.PanicError {
	t.Helper()
	pe, ok := v.(*scope.PanicError)
	if !ok {
		t.Fatalf("Run panicked with %T %v; want a *scope.PanicError", v, v)
	}
	equal(t, name, pe.Name)
	equal(t, -1, pe.Index)
	equal(t, value, pe.Value)
	isTrue(t, strings.Contains(string(pe.Stack), frame), "the stack lacks %s:\n%s", frame, pe.Stack)
	return pe
}
