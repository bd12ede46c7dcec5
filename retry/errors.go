package retry

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"time"
)

// Sentinel errors. The error a call returns when it gives up is an [*Error] that matches
// ErrExhausted and exactly one reason (ErrMaxAttempts, ErrMaxElapsed, ErrBudgetExhausted,
// ErrPermanent or ErrCanceled) under errors.Is.
var (
	// ErrExhausted matches every error returned by a call that gave up, whatever the reason.
	ErrExhausted = errors.New("retry: gave up")
	// ErrMaxAttempts: the last allowed attempt failed.
	ErrMaxAttempts = errors.New("retry: max attempts reached")
	// ErrMaxElapsed: the next attempt would start after the WithMaxElapsed limit (counted from
	// the start of the call) or after the context's deadline, so the call gave up at once
	// instead of sleeping. In the deadline case the error also matches
	// context.DeadlineExceeded.
	ErrMaxElapsed = errors.New("retry: out of time")
	// ErrBudgetExhausted: the shared [Budget] refused the retry.
	ErrBudgetExhausted = errors.New("retry: budget exhausted")
	// ErrPermanent: the error was not retryable: marked with [Permanent] or rejected by the
	// [WithRetryIf] predicate.
	ErrPermanent = errors.New("retry: permanent error")
	// ErrCanceled: the caller's context was canceled or its deadline passed, before, during
	// or between attempts. The context's cause is in [Error.Cause]. Only the caller's
	// context counts: an attempt that fails with a context error of its own (an
	// [WithAttemptTimeout], a client or dial timeout) while the caller's context is live is
	// retried like any other error.
	ErrCanceled = errors.New("retry: canceled")
	// ErrAttemptTimeout is the cancellation cause of an attempt's context when its
	// [WithAttemptTimeout] elapses: context.Cause(ctx) inside the operation returns it.
	ErrAttemptTimeout = errors.New("retry: attempt timed out")
)

// Error is the outcome of a call that gave up. It reports why (Reason), how many attempts
// ran, and keeps every attempt's error: errors.Is and errors.As search all of them, and the
// context's cause when the call was canceled. The last operation error is never lost, even
// on cancellation.
//
// An outcome matches [ErrExhausted] and its own Reason, never another reason. An attempt's
// error may hold the outcome of a nested call (an operation that calls Do itself and returns
// its *Error, directly or wrapped): errors.Is and errors.As on the outer outcome find that
// nested *Error and everything it holds, its attempts' errors and its Cause, at any depth, but
// not its Reason, which says why the nested call gave up, not this one. To learn that, ask the
// nested outcome itself (errors.As on [Error.Errors]).
type Error struct {
	// Reason is one of ErrMaxAttempts, ErrMaxElapsed, ErrBudgetExhausted, ErrPermanent or
	// ErrCanceled.
	Reason error
	// Attempts is the number of attempts that ran (0 if the context was done before the
	// first).
	Attempts int
	// Cause is context.Cause(ctx) when Reason is ErrCanceled, context.DeadlineExceeded when
	// the context's deadline cut the retries short, and nil otherwise.
	Cause error

	list []error // every attempt's error in order, then Cause if non-nil
	view []error // Unwrap's list: list, with an error that holds a nested *Error behind nestedCauses
	buf  [4]error
}

// Errors returns every attempt's error, oldest first. The slice must not be modified.
func (e *Error) Errors() []error { return e.list[:e.Attempts:e.Attempts] }

// Last returns the last attempt's error, or nil if no attempt ran.
func (e *Error) Last() error {
	if e.Attempts == 0 {
		return nil
	}
	return e.list[e.Attempts-1]
}

// Unwrap returns every attempt's error followed by Cause, if any, for errors.Is and
// errors.As to search. An error that holds a nested call's *Error is returned behind a
// wrapper with the same text, which errors.Is and errors.As search in the same way except
// for the nested outcomes' reasons (an error type whose own Is method calls errors.Is on what
// it wraps decides for itself); [Error.Errors] returns every attempt's error as it was
// returned.
func (e *Error) Unwrap() []error { return e.view }

// hideNestedReasons sets e.view from e.list: every error that holds a nested *Error goes
// behind nestedCauses, so that errors.Is, walking Unwrap, never calls a nested outcome's Is.
// Only a list that holds one allocates.
func (e *Error) hideNestedReasons() {
	e.view = e.list
	for i, err := range e.list {
		if !holdsOutcome(err) {
			continue
		}
		if &e.view[0] == &e.list[0] {
			e.view = slices.Clone(e.list)
		}
		e.view[i] = &nestedCauses{err}
	}
}

// holdsOutcome reports whether err's tree, walked through Unwrap as errors.Is walks it,
// holds an *Error.
func holdsOutcome(err error) bool {
	for err != nil {
		switch u := err.(type) {
		case *Error:
			return true
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if holdsOutcome(inner) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// nestedCauses stands, in an outcome's Unwrap, for an error that holds a nested call's
// *Error. It has the error's text; errors.Is finds in it what errors.Is would find in the
// error, except the reasons of nested outcomes (and ErrExhausted through them), and
// errors.As finds what errors.As would. It has no Unwrap, or errors.Is would walk past it.
type nestedCauses struct{ err error }

func (n *nestedCauses) Error() string { return n.err.Error() }

func (n *nestedCauses) Is(target error) bool {
	return target != nil && causeIs(n.err, target, reflect.TypeOf(target).Comparable())
}

func (n *nestedCauses) As(target any) bool { return errors.As(n.err, target) }

// causeIs is errors.Is's search of err's tree for target, except that a nested *Error
// counts only for the errors it holds (its list), never through its own Is.
func causeIs(err, target error, comparable bool) bool {
	for err != nil {
		if comparable && err == target {
			return true
		}
		if n, ok := err.(*Error); ok {
			for _, inner := range n.list {
				if causeIs(inner, target, comparable) {
					return true
				}
			}
			return false
		}
		if x, ok := err.(interface{ Is(error) bool }); ok && x.Is(target) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if causeIs(inner, target, comparable) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// Is reports whether target is ErrExhausted or e's Reason.
func (e *Error) Is(target error) bool {
	return target == ErrExhausted || target == e.Reason
}

// Error describes the outcome, e.g.
// "retry: max attempts reached after 3 attempts: connection refused" or
// "retry: canceled after 2 attempts: context canceled; last error: connection refused".
func (e *Error) Error() string {
	reason := ErrExhausted.Error()
	if e.Reason != nil {
		reason = e.Reason.Error()
	}
	var s string
	switch e.Attempts {
	case 0:
		s = reason + " before the first attempt"
	case 1:
		s = reason + " after 1 attempt"
	default:
		s = reason + " after " + strconv.Itoa(e.Attempts) + " attempts"
	}
	last := e.Last()
	switch {
	case e.Cause != nil && last != nil:
		return s + ": " + e.Cause.Error() + "; last error: " + last.Error()
	case e.Cause != nil:
		return s + ": " + e.Cause.Error()
	case last != nil:
		return s + ": " + last.Error()
	}
	return s
}

// Permanent marks err as not retryable: a call that receives it gives up at once with
// ErrPermanent, whatever the [WithRetryIf] predicate says. errors.Is and errors.As see through the
// mark. Permanent(nil) is nil.
//
// The mark applies to the retry loop that receives it. When a nested call gives up, the
// [*Error] it returns carries no mark to an outer loop, which classifies it with its own
// rules (wrap it in Permanent again to stop the outer loop as well).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// After attaches a server's hint to err: retry no sooner than d. The hint replaces the
// backoff delay for the next retry; the loop clamps it to [WithMaxHint] and adds jitter only
// upward, so the retry never fires earlier than asked. A negative d counts as 0.
// After(nil, d) is nil. Use [ParseRetryAfter] for an HTTP Retry-After header.
func After(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &hintError{err, max(d, 0)}
}

type hintError struct {
	err error
	d   time.Duration
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

// IsPermanent reports whether err, or an error it wraps, was marked with [Permanent]. It
// does not look inside the [*Error] of a nested call.
func IsPermanent(err error) bool {
	return classify(err).permanent
}

// Hint returns the delay attached to err (or an error it wraps) with [After], unclamped.
// It does not look inside the [*Error] of a nested call.
func Hint(err error) (time.Duration, bool) {
	c := classify(err)
	return c.hint, c.hinted
}

// class is what the loop needs to know about an error.
type class struct {
	permanent bool          // marked with Permanent
	hinted    bool          // carries a hint from After
	hint      time.Duration // the first hint found
}

// classify walks err's tree once, without allocating. Our marks count only outside a nested
// *Error (they belonged to the inner loop), so the walk does not enter one.
func classify(err error) (c class) {
	for err != nil {
		switch e := err.(type) {
		case *permanentError:
			c.permanent = true
			err = e.err
			continue
		case *hintError:
			if !c.hinted {
				c.hint, c.hinted = e.d, true
			}
			err = e.err
			continue
		case *Error:
			return c // nothing below a nested call's outcome counts
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				ic := classify(inner)
				c.permanent = c.permanent || ic.permanent
				if ic.hinted && !c.hinted {
					c.hint, c.hinted = ic.hint, true
				}
			}
			return c
		default:
			return c
		}
	}
	return c
}
