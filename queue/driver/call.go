package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// Every error starts with "Name: op: ".
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

// SettingsError is the error of a backend whose process asks for a shared
// setting of a queue (one that every process of the queue must share, such
// as its capacity) other than the one the queue has, set by another
// process.
type SettingsError struct {
	Setting string // the setting's name, "capacity", "dedup horizon", ...
	Mine    string // this process's value
	Queue   string // the queue's value
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("%s %s differs from the queue's %s, set by another process", e.Setting, e.Mine, e.Queue)
}

// A Setting is one shared setting of a queue, as this process asks for it
// and as the queue has it, for [CompareSettings].
type Setting struct {
	Name        string
	Mine, Queue any // compared with ==, shown with fmt.Sprint
}

// CompareSettings returns a *SettingsError naming the first of settings
// whose two values differ, or nil if none does.
func CompareSettings(settings ...Setting) error {
	for _, s := range settings {
		if s.Mine != s.Queue {
			return &SettingsError{s.Name, fmt.Sprint(s.Mine), fmt.Sprint(s.Queue)}
		}
	}
	return nil
}

// Shared are the settings of a queue that every process of it must share,
// whatever its backend: a backend records them with the queue when the
// first process opens it and compares them at every later Open (and the
// lease at every CheckLease, see [SharedLease]), so that no process can
// weaken another's guarantee, say with a shorter dedup horizon.
type Shared struct {
	Capacity        int
	Overflow        string // the Overflow's String
	DedupHorizon    time.Duration
	DeadLetterLimit int
	Lease           time.Duration // zero until the first CheckLease
}

// SharedOf returns the shared settings of cfg (with its defaults), with no lease.
func SharedOf(cfg Config) Shared {
	cfg = cfg.WithDefaults()
	return Shared{Capacity: cfg.Capacity, Overflow: cfg.Overflow.String(),
		DedupHorizon: cfg.DedupHorizon, DeadLetterLimit: cfg.DeadLetterLimit}
}

// Diff returns a *SettingsError naming the first setting in which s (this
// process's) and q (the queue's) differ, then the first of more (a
// backend's own shared settings) that does, or nil. The lease is compared
// only when both have one.
func (s Shared) Diff(q Shared, more ...Setting) error {
	lease := Setting{Name: "lease"}
	if s.Lease != 0 && q.Lease != 0 {
		lease.Mine, lease.Queue = s.Lease, q.Lease
	}
	return CompareSettings(slices.Concat([]Setting{
		{"capacity", s.Capacity, q.Capacity},
		{"overflow", s.Overflow, q.Overflow},
		{"dedup horizon", s.DedupHorizon, q.DedupHorizon},
		{"dead-letter limit", s.DeadLetterLimit, q.DeadLetterLimit},
	}, more, []Setting{lease})...)
}
