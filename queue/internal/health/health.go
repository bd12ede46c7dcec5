// Package health tracks whether a queue's backend answers, from the outcomes
// of the queue's own backend calls.
//
// The contract: any goroutine reports the outcome of a backend call to
// [Tracker.Observe] (after asking [Tracker.Quiet], which a hot path can
// afford on every call); the observations are serialised, and the one that
// changes Reachable is the one that reports the change, with the State it
// made, so that the callers' hooks see each change once. [Tracker.State] returns the State as of the last
// observation that completed before it.
package health

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// State is a queue's health, as queue.Health documents its fields (but the
// reconnect count, which the backend keeps).
type State struct {
	Reachable, Paused  bool
	Since, LastErrorAt time.Time
	LastError          error
}

// Tracker tracks a State. Its zero value is not usable: call Init.
type Tracker struct {
	down atomic.Bool // !s.Reachable, readable without mu
	mu   sync.Mutex  // guards s
	s    State
}

// Init starts the tracker reachable since now. It must be called before any
// other method.
func (t *Tracker) Init(now time.Time) {
	t.s = State{Reachable: true, Since: now}
}

// Quiet reports whether Observe of err has nothing to do: a call that
// succeeded while the backend is reachable. Such a call costs one atomic
// load.
func (t *Tracker) Quiet(err error) bool { return err == nil && !t.down.Load() }

// SetPaused records whether the queue is paused.
func (t *Tracker) SetPaused(p bool) {
	t.mu.Lock()
	t.s.Paused = p
	t.mu.Unlock()
}

// State returns the tracked State.
func (t *Tracker) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s
}

// Observe records the outcome err of a backend call made with ctx, and
// reports whether it changed Reachable, with the State it made. An error
// that is the end of ctx says nothing of the backend and is not recorded;
// the outcomes the queue documents (ErrDuplicate, ErrFull, ErrDropped,
// ErrNotFound, ErrLeaseLost, ErrClosed) are answers; any other error is a
// failure, kept as LastError, and one matching ErrUnavailable makes the
// backend unreachable until the next answer.
func (t *Tracker) Observe(ctx context.Context, err error) (State, bool) {
	if t.Quiet(err) {
		return State{}, false
	}
	fail := err != nil && failure(ctx, err)
	switch {
	case err != nil && !fail && !answered(err):
		return State{}, false // the caller's ctx ended
	case !fail && !t.down.Load():
		return State{}, false // an answer, and nothing to change
	}
	unavailable := fail && errors.Is(err, driver.ErrUnavailable)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if fail {
		t.s.LastError, t.s.LastErrorAt = err, now
	}
	changed := t.s.Reachable == unavailable
	if changed {
		t.s.Reachable, t.s.Since = !unavailable, now
		t.down.Store(unavailable)
	}
	return t.s, changed
}

// failure reports whether err, returned by a backend call made with ctx, is
// a failure of the backend rather than an outcome the queue documents or
// the end of the caller's ctx.
func failure(ctx context.Context, err error) bool {
	switch {
	case ctx.Err() != nil && (errors.Is(err, context.Cause(ctx)) || errors.Is(err, ctx.Err())):
		return false // the caller gave up, or a consumer is shutting down
	case errors.Is(err, driver.ErrUnavailable):
		return true
	}
	return !answered(err)
}

// answered reports whether err is an outcome the backend answered with.
func answered(err error) bool {
	return errors.Is(err, driver.ErrDuplicate) || errors.Is(err, driver.ErrFull) || errors.Is(err, driver.ErrDropped) ||
		errors.Is(err, driver.ErrNotFound) || errors.Is(err, driver.ErrLeaseLost) || errors.Is(err, driver.ErrClosed)
}
