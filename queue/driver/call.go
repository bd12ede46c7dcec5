package driver

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Call is how a backend bounds and classifies the calls it makes to its
// broker, so that every backend reports them by the same rule. A Call is
// an immutable value, safe for concurrent use; a backend keeps one for all
// its calls.
//
// The rule of [Call.Fail], for a call made with a context from
// [Call.Context] (or one derived from it) that failed with err:
//   - the caller's ctx ended first: the error matches context.Cause(ctx)
//     and ErrUnavailable, whatever err is: the call was abandoned, so its
//     outcome is unknown;
//   - the call's own deadline passed first: the error matches
//     ErrUnavailable and err;
//   - err says the broker could not be reached (Unreachable): the error
//     matches ErrUnavailable and err;
//   - else the error matches err, and not ErrUnavailable.
//
// Every error of Fail starts with "Name: op: " (those of [Lifecycle] say
// what they are: see there).
type Call struct {
	// Name is the backend's package name, the first word of its errors.
	Name string
	// Unreachable reports whether err, an error of the broker's client,
	// says the broker could not be reached or did not answer. Each backend
	// knows its client's errors; a nil Unreachable knows none.
	Unreachable func(err error) bool
}

// timeoutError is the cause of a call's context when its deadline passed:
// it names the backend, so that one Call tells its own deadline from the
// caller's.
type timeoutError struct{ name string }

func (e timeoutError) Error() string { return e.name + ": no answer within the call timeout" }

// Context returns the context of one call (or a short series of them)
// made with ctx: it ends with ctx, or after d, so that no call waits for
// ever for an answer that died with a broker.
func (c Call) Context(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, timeoutError{c.Name})
}

// UntilDeadline returns the context of a call that takes something for
// its caller, such as a job for a receiver: it keeps ctx's values, and
// ends when ctx reaches its deadline, with ctx's cause, but not when ctx is
// cancelled (and, once ctx is cancelled, not at its deadline either). A
// caller who leaves (a consumer's Close cancels its receivers) can so wait
// for the call's answer and give back what it took, in a context of
// [Call.GiveBack], rather than leave it taken for nobody. It also ends,
// with abandon's cause, when the abandon context that ctx carries (see
// [WithAbandon]) ends. Bound the call with Context, as any other. Call
// stop, which releases what watches ctx and abandon, once the call is
// done.
func (Call) UntilDeadline(ctx context.Context) (sctx context.Context, stop func()) {
	return detach(ctx, true)
}

// GiveBack returns the context in which a caller who left gives back what
// a call took for it: it keeps ctx's values, and ends neither with ctx nor
// at ctx's deadline, only when the abandon context that ctx carries (see
// [WithAbandon]) ends, with abandon's cause: the caller has stopped
// waiting, and what it took comes back when its lease ends. Bound the
// calls with Context, as any other. Call stop, which releases what watches
// abandon, once they are done.
func (Call) GiveBack(ctx context.Context) (gctx context.Context, stop func()) {
	return detach(ctx, false)
}

// detach is UntilDeadline, or GiveBack if !timed.
func detach(ctx context.Context, timed bool) (context.Context, func()) {
	a, _ := ctx.Value(abandonKey{}).(*abandoning)
	if timed {
		_, timed = ctx.Deadline()
	}
	if !timed && a == nil {
		return context.WithoutCancel(ctx), func() {}
	}
	if !timed && a.self == ctx { // a receiver's usual call: no watcher to set up
		return a.detached, func() {}
	}
	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	unwatch := func() bool { return false }
	if timed {
		unwatch = whenDone(ctx, func() {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				cancel(context.Cause(ctx))
			}
		})
	}
	unabandon := func() bool { return false }
	if a != nil {
		unabandon = whenDone(a.detached, func() { cancel(context.Cause(a.detached)) })
	}
	return sctx, func() {
		unwatch()
		unabandon()
		cancel(nil)
	}
}

// whenDone calls f once ctx is done: now, if it is, else as context.AfterFunc
// does, whose stop it returns.
func whenDone(ctx context.Context, f func()) (stop func() bool) {
	if ctx.Err() != nil {
		f()
		return func() bool { return false }
	}
	return context.AfterFunc(ctx, f)
}

// abandonKey is the key of the *abandoning that WithAbandon puts in a
// context.
type abandonKey struct{}

// abandoning is what WithAbandon puts in the copy of a context it returns.
type abandoning struct {
	self     context.Context // the copy
	detached context.Context // the copy's values; ends when abandon ends, with its cause
}

// WithAbandon returns a copy of ctx that carries abandon, for a caller who
// leaves in two steps, as a consumer's Close does: the end of ctx (Close
// cancels its receivers) asks a Receive in flight to finish the call it
// sent and give back what it took (see [Call.UntilDeadline] and
// [Call.GiveBack]); the end of abandon (Close's own ctx ended) says to stop
// waiting for that. The contexts that UntilDeadline and GiveBack return
// for the copy, or for a context derived from it, then end with abandon's
// cause. Cancel abandon once the copy is no longer used: what watches it
// is released then. The queue package gives its receivers such a context;
// a backend has no need to call WithAbandon.
func WithAbandon(ctx, abandon context.Context) context.Context {
	a := &abandoning{}
	a.self = context.WithValue(ctx, abandonKey{}, a)
	detached, cancel := context.WithCancelCause(context.WithoutCancel(a.self))
	whenDone(abandon, func() { cancel(context.Cause(abandon)) })
	a.detached = detached
	return a.self
}

// Made panics, with "Name: zero Backend: use Name.New", if made is false,
// where made says whether the backend's New ran (a field that New sets is
// not nil): the check of a method of a backend whose zero value is not
// usable, where the method does not start with its Lifecycle's Open, Check
// or Begin, which make the same check (see Lifecycle.Init).
func (c Call) Made(made bool) {
	if !made {
		panic(c.Name + ": zero Backend: use " + c.Name + ".New")
	}
}

// Fail returns the error of op, a call made with ctx that failed with err
// (not nil), by the rule in the doc of [Call].
func (c Call) Fail(ctx context.Context, op string, err error) error {
	cause := context.Cause(ctx)
	timedOut := errors.Is(cause, timeoutError{c.Name}) || errors.Is(err, timeoutError{c.Name})
	switch {
	case ctx.Err() != nil && !timedOut:
		return fmt.Errorf("%s: %s: %w (%w)", c.Name, op, cause, ErrUnavailable)
	case timedOut:
		return fmt.Errorf("%s: %s: %w: %w: %w", c.Name, op, ErrUnavailable, timeoutError{c.Name}, err)
	case c.Unreachable != nil && c.Unreachable(err):
		return fmt.Errorf("%s: %s: %w: %w", c.Name, op, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %s: %w", c.Name, op, err)
}

// Sleep waits for d between two tries of a call, and reports whether it
// did: false if ctx ended first.
func (Call) Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Wait is a waiting call's wait for news: it returns when wake is closed
// (woken true), after d (woken false, nil: look again), when closing is
// closed (ErrClosed: the backend closed) or when ctx ends (its cause),
// whichever comes first. A nil channel never comes.
func (Call) Wait(ctx context.Context, wake, closing <-chan struct{}, d time.Duration) (woken bool, err error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-wake:
		return true, nil
	case <-t.C:
		return false, nil
	case <-closing:
		return false, ErrClosed
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
}
