package scope

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/corral-go/corral/internal/panics"
)

// ErrGoexit is the error of a task that called runtime.Goexit (as t.FailNow does) instead of
// returning. It is reported inside a *TaskError: a task that exits this way has failed. It is
// the same value as pool.ErrGoexit and queue.ErrGoexit.
var ErrGoexit = panics.ErrGoexit

// ErrTimeout matches, with errors.Is, the cancellation cause of a scope whose WithTimeout
// expired (a *TimeoutError), and Run's error that reports it.
// That cause also matches context.DeadlineExceeded.
var ErrTimeout = errors.New("scope: timeout")

// TaskError is a task's failure: it says which task failed and wraps what it returned. It is
// the cancellation cause the siblings of a failed task see through context.Cause, and an
// element of the error Run returns.
type TaskError struct {
	// Name is the task's name if it was started with GoNamed, else "".
	Name string
	// Index is the task's start index: its position, from 0, among the calls of Go, GoNamed,
	// TryGo and Spawn on the scope (a call that started, skipped or refused a task).
	Index int
	// Err is the error the task returned, or ErrGoexit.
	Err error
}

// Error says which task failed and how: `scope: task "name" failed: err` or
// `scope: task #3 failed: err`.
func (e *TaskError) Error() string {
	if e.Err == ErrGoexit {
		return "scope: task " + panics.TaskLabel(e.Name, e.Index) + " called runtime.Goexit"
	}
	return "scope: task " + panics.TaskLabel(e.Name, e.Index) + " failed: " + e.Err.Error()
}

// Unwrap returns the task's error.
func (e *TaskError) Unwrap() error { return e.Err }

// PanicError is a task's panic: the recovered value, the stack of the task's goroutine at the
// panic, and which task it was. It is the same type as pool.PanicError.
//
// By default Run re-panics with a *PanicError once every task has returned; if several tasks
// panicked, the first is re-raised and carries the others, and any other task failures, so
// that none is lost (Error prints them all; errors.Is and errors.As search them all). With the
// WithPanicsAsErrors option a *PanicError is a failure like any other and is returned by Run.
//
// Its fields: Name is the task's name if it was started with GoNamed, else "", and a panic
// that is not a task's says whose it is: "body" (Run's body), "StuckReport" (the
// WithStuckReport report) or "Joiner" (Joiner.Decide). Index is the task's start index (see
// TaskError.Index), or -1 for a panic that is not a task's. Value is the value the task
// panicked with; Stack the panicking goroutine's stack, as printed by runtime/debug.Stack.
//
// Its Error method says which task panicked (`scope: task "name" panicked: v` or
// `scope: task #3 panicked: v`), with the stack, followed by every other panic and failure
// the error carries. Its Unwrap method returns the panic value if it is an error, followed by
// the other failures the error carries.
type PanicError = panics.Error

// TimeoutError is the expiry of a scope's WithTimeout. It matches ErrTimeout and
// context.DeadlineExceeded (errors.Is).
//
// It is the cancellation cause the tasks see through context.Cause, with Interrupted empty, and,
// when Run reports the timeout (see Errors), an element of Run's error that names the tasks the
// timeout interrupted: those that returned the scope's cancellation instead of a result. Such a
// task is not a failure of its own (its error only echoes the timeout), so it is listed here,
// not among the failures.
type TimeoutError struct {
	// Timeout is the duration given to WithTimeout.
	Timeout time.Duration
	// Interrupted lists the tasks that ended by returning the timeout's cancellation (ctx.Err(),
	// or an error matching it), in start index order: each with its Name, Index and the error it
	// returned (Err). It is nil in the cause the tasks see.
	Interrupted []*TaskError
}

// Error says how long the timeout was, and which tasks it interrupted: `scope: timed out after
// 2s, interrupting tasks "b6" (#6), #7`.
func (e *TimeoutError) Error() string {
	msg := "scope: timed out after " + e.Timeout.String()
	switch len(e.Interrupted) {
	case 0:
		return msg
	case 1:
		msg += ", interrupting task "
	default:
		msg += ", interrupting tasks "
	}
	var b strings.Builder
	b.WriteString(msg)
	for i, t := range e.Interrupted {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(panics.TaskLabel(t.Name, t.Index))
		if t.Name != "" {
			b.WriteString(" (#" + strconv.Itoa(t.Index) + ")")
		}
	}
	return b.String()
}

// Is reports whether target is ErrTimeout or context.DeadlineExceeded.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// doneError is the cancellation cause of a scope cancelled without a failure: a Joiner
// completed it on a task's success, a MapSeq consumer stopped, or Run returned. It matches
// context.Canceled, the cause a plain cancel gives, and its message says why.
type doneError struct{ msg string }

func (e *doneError) Error() string { return e.msg }

func (e *doneError) Is(target error) bool { return target == context.Canceled }

// bodyError is the cancellation cause when Run's body returned an error or panicked.
type bodyError struct{ err error }

func (e *bodyError) Error() string {
	if e.err == nil {
		return "scope: body panicked or called runtime.Goexit"
	}
	return "scope: body failed: " + e.err.Error()
}

func (e *bodyError) Unwrap() error { return e.err }

// joinedError is Run's error when it reports more than one failure: errors.Join's text and
// Unwrap, in a type of its own, so that Errors can tell Run's list of failures from a single
// failure that is itself a joined error (a body that returned errors.Join(a, b)).
type joinedError struct{ errs []error }

// Error returns the failures' messages, one per line, as errors.Join does.
func (e *joinedError) Error() string {
	var b strings.Builder
	for i, err := range e.errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the failures, root cause first.
func (e *joinedError) Unwrap() []error { return e.errs }

// Errors lists the failures that err holds, each once, in the order Run reports them, root
// cause first. err is what Run, First or Map returned, what MapSeq yielded last, or the
// *PanicError that Run panicked with (recovered). Each element is one failure: a *TaskError (a
// task's error, or its runtime.Goexit), a *PanicError (a task's panic with WithPanicsAsErrors,
// or a panic outside the tasks: Name "body", "Joiner" or "StuckReport"), an error that the
// body returned, or the cancellation from outside (the parent ctx, or WithTimeout's
// *TimeoutError, which names the tasks the timeout interrupted) when Run reports it. So len(Errors(err)) counts the failures of a Supervise scope, whatever their
// number:
//
//	for _, f := range scope.Errors(err) {
//		var te *scope.TaskError
//		if errors.As(f, &te) {
//			log.Printf("task %s (#%d) failed: %v", te.Name, te.Index, te.Err)
//		}
//	}
//
// Errors(nil) is nil. An error that Run did not build (a single failure, or one wrapped
// again by the caller) is a list of one, err itself. For a *PanicError that Run panicked
// with, the first element is that panic alone, a copy with the same Name, Index, Value and
// Stack that carries none of the others, and each failure it carries follows. The returned
// slice is the caller's to modify.
func Errors(err error) []error {
	switch e := err.(type) {
	case nil:
		return nil
	case *joinedError:
		return append([]error(nil), e.errs...)
	case *PanicError:
		others := panics.Others(e)
		if len(others) == 0 {
			return []error{e}
		}
		return append([]error{panics.Alone(e)}, others...)
	}
	return []error{err}
}
