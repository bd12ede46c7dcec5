package pool

import (
	"errors"
	"strconv"

	"github.com/corral-go/corral/internal/panics"
)

var (
	// ErrClosed is returned by a submit after Close has been called, and ends the wait of a
	// blocked submitter when the pool closes.
	ErrClosed = errors.New("pool: closed")
	// ErrFull is returned by Submit under Reject when the pool is full.
	ErrFull = errors.New("pool: queue full")
	// ErrDropped is matched by the error of a task that was dropped: refused under
	// DropNewest, evicted under DropOldest, or abandoned at shutdown.
	ErrDropped = errors.New("pool: task dropped")
	// ErrExpired is matched by the error of a task that was skipped because its context was
	// done when a worker picked it up. The error also wraps the context's cause.
	ErrExpired = errors.New("pool: task expired in queue")
	// ErrGoexit is the error of a task that called runtime.Goexit (as t.FailNow does)
	// instead of returning. Such a task has failed: its Handle or Group, or Hooks.OnError,
	// sees ErrGoexit, and Stats counts it in Failed. It is the same value as scope.ErrGoexit
	// and queue.ErrGoexit.
	ErrGoexit = panics.ErrGoexit
)

// A PanicError is the failure of a task that panicked. The worker that ran the task survives.
// It is the same type as scope.PanicError: Value is the value passed to panic, Stack the stack
// of the panicking goroutine, captured when the panic was recovered; a pool's task has Name ""
// and Index -1. Its Error method returns "pool: task panicked: " and the panic value; its
// Unwrap method returns the panic value if it is an error, so that errors.Is and errors.As
// see it.
type PanicError = panics.Error

// dropError is the error a task's Handle or Group sees when it did not run.
type dropError struct {
	reason Reason
	cause  error // may be nil
}

// describe says, for an error message, what happened to a task that did not run for reason r.
func describe(r Reason) string {
	switch r {
	case ReasonEvicted:
		return "evicted by a newer task"
	case ReasonShutdown:
		return "abandoned at shutdown"
	}
	return r.String()
}

func (e *dropError) Error() string {
	var s string
	if e.reason == ReasonExpired {
		s = ErrExpired.Error()
	} else {
		s = ErrDropped.Error() + ": " + describe(e.reason)
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

func (e *dropError) Is(target error) bool {
	switch target {
	case ErrExpired:
		return e.reason == ReasonExpired
	case ErrDropped:
		return e.reason != ReasonExpired
	case ErrClosed:
		return e.reason == ReasonShutdown
	}
	return false
}

func (e *dropError) Unwrap() error { return e.cause }

// shutdownError is the cause with which Close cancels running tasks' contexts when its own
// context ends first. It matches ErrClosed and wraps the cause of Close's context.
type shutdownError struct{ cause error }

func (e *shutdownError) Error() string {
	return "pool: shut down before the task finished: " + e.cause.Error()
}

func (e *shutdownError) Is(target error) bool { return target == ErrClosed }
func (e *shutdownError) Unwrap() error        { return e.cause }

// closeError is what Close returns when its context ended before the pool was drained.
type closeError struct {
	abandoned, cancelled int
	cause                error
}

func (e *closeError) Error() string {
	return "pool: close: " + plural(e.abandoned, "queued task") + " abandoned, " +
		plural(e.cancelled, "running task") + " cancelled: " + e.cause.Error()
}

func (e *closeError) Unwrap() error { return e.cause }

func plural(n int, what string) string {
	s := strconv.Itoa(n) + " " + what
	if n != 1 {
		s += "s"
	}
	return s
}
