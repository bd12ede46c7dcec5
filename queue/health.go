package queue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// Health is whether a queue's backend answers, as the queue's own backend
// calls (its producers', its consumers' and its Stats') have found. It tells
// "no work" from "cannot reach the broker": a consumer of a backend that
// cannot be reached keeps retrying, and Health says why nothing is handled.
// It implements [slog.LogValuer].
type Health struct {
	// Reachable is false from a backend call that failed with
	// [ErrUnavailable] until the next one that got an answer (any answer:
	// ErrDuplicate and ErrFull are answers). It is true for a new queue.
	Reachable bool
	// Since is when Reachable last changed, or when the queue was created.
	Since time.Time
	// Reconnects counts the times the backend re-established its
	// connection to the broker, if it keeps one (see [driver.Reconnecter]).
	Reconnects uint64
	// LastError is the last backend call's failure: any error but the end
	// of the caller's ctx and the outcomes the queue documents
	// (ErrDuplicate, ErrFull, ErrDropped, ErrNotFound, ErrLeaseLost,
	// ErrClosed). Nil if there was none.
	LastError error
	// LastErrorAt is when LastError happened (zero if there was none).
	LastErrorAt time.Time
	// Paused says the queue is paused ([Queue.Pause]), as this process
	// last learned it: from its own Pause and Resume, and from Stats.
	Paused bool
}

// LogValue returns a group of reachable and the other fields that are not
// zero (since, reconnects, last_error, last_error_at, paused), so that
// slog.WarnContext(ctx, "queue health", "health", h) logs it in one call.
func (h Health) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs, slog.Bool("reachable", h.Reachable))
	if !h.Since.IsZero() {
		attrs = append(attrs, slog.Time("since", h.Since))
	}
	if h.Reconnects != 0 {
		attrs = append(attrs, slog.Uint64("reconnects", h.Reconnects))
	}
	if h.LastError != nil {
		attrs = append(attrs, slog.Any("last_error", h.LastError))
	}
	if !h.LastErrorAt.IsZero() {
		attrs = append(attrs, slog.Time("last_error_at", h.LastErrorAt))
	}
	if h.Paused {
		attrs = append(attrs, slog.Bool("paused", true))
	}
	return slog.GroupValue(attrs...)
}

// health tracks a queue's Health. The producers and workers report every
// backend call to observe; a call that succeeds while the backend is
// reachable costs one atomic load.
type health struct {
	down atomic.Bool // !h.Reachable, readable without mu
	mu   sync.Mutex  // guards h
	h    Health
}

// quiet reports whether observe of err has nothing to do: a call that
// succeeded while the backend is reachable. The callers on hot paths ask it
// first, so that such a call costs them one atomic load and no call.
func (hl *health) quiet(err error) bool { return err == nil && !hl.down.Load() }

func (hl *health) init(now time.Time) {
	hl.h = Health{Reachable: true, Since: now}
}

// setPaused records whether the queue is paused.
func (hl *health) setPaused(p bool) {
	hl.mu.Lock()
	hl.h.Paused = p
	hl.mu.Unlock()
}

// observe records the outcome of a backend call made with ctx, and calls
// onChange (if not nil) with ctx and the new Health when Reachable changed.
func (hl *health) observe(ctx context.Context, err error, onChange func(context.Context, Health)) {
	if hl.quiet(err) {
		return
	}
	fail := err != nil && failure(ctx, err)
	switch {
	case err != nil && !fail && !answered(err):
		return // the caller's ctx ended: that says nothing of the backend
	case !fail && !hl.down.Load():
		return // an answer, and nothing to change
	}
	unavailable := fail && errors.Is(err, ErrUnavailable)
	hl.mu.Lock()
	now := time.Now()
	if fail {
		hl.h.LastError, hl.h.LastErrorAt = err, now
	}
	changed := hl.h.Reachable == unavailable
	if changed {
		hl.h.Reachable, hl.h.Since = !unavailable, now
		hl.down.Store(unavailable)
	}
	h := hl.h
	hl.mu.Unlock()
	if changed && onChange != nil {
		onChange(ctx, h)
	}
}

// failure reports whether err, returned by a backend call made with ctx, is
// a failure of the backend rather than an outcome the queue documents or
// the end of the caller's ctx.
func failure(ctx context.Context, err error) bool {
	switch {
	case ctx.Err() != nil && (errors.Is(err, context.Cause(ctx)) || errors.Is(err, ctx.Err())):
		return false // the caller gave up, or a consumer is shutting down
	case errors.Is(err, ErrUnavailable):
		return true
	}
	return !answered(err)
}

// answered reports whether err is an outcome the backend answered with.
func answered(err error) bool {
	return errors.Is(err, ErrDuplicate) || errors.Is(err, ErrFull) || errors.Is(err, ErrDropped) ||
		errors.Is(err, ErrNotFound) || errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrClosed)
}

// Health returns the queue's Health. It makes no backend call, so it
// answers at once even when the backend cannot be reached, and after Close.
func (q *Queue[T]) Health() Health {
	if q.backend == nil {
		panic(zeroQueue)
	}
	q.hl.mu.Lock()
	h := q.hl.h
	q.hl.mu.Unlock()
	if r, ok := q.backend.(driver.Reconnecter); ok {
		h.Reconnects = r.Reconnects()
	}
	return h
}

// observe records the outcome of a backend call made by the caller's
// goroutine (see health.observe).
func (q *Queue[T]) observe(ctx context.Context, err error) {
	if !q.hl.quiet(err) {
		q.hl.observe(ctx, err, q.onHealth)
	}
}

// healthChanged calls the OnHealth hook, with the reconnect count filled in.
func (q *Queue[T]) healthChanged(ctx context.Context, h Health) {
	f := q.hooks.OnHealth
	if f == nil {
		return
	}
	if r, ok := q.backend.(driver.Reconnecter); ok {
		h.Reconnects = r.Reconnects()
	}
	f(ctx, h)
}
