package queue

import (
	"context"
	"log/slog"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/health"
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
	// Losses counts the times this queue's backend found that the broker
	// had lost what it stored for the queue (its jobs, if it had any, dead
	// letters and leases, which stay lost: a server restarted without
	// persistence, a replica promoted before it had them) and set the queue
	// up on it again, if the backend can tell (see [driver.LossCounter];
	// queue/redis can). Calls that find a loss at the same moment may each
	// count it, and the process whose call finds it first counts it: another
	// process of the same queue may count none. Watch its growth in every
	// process (the sum over processes, in a metric). The OnHealth hook is
	// called when a consumer's Receive, a Drain or a Stats finds it grown,
	// and WithLogger logs it.
	Losses uint64
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
// zero (since, reconnects, losses, last_error, last_error_at, paused), so that
// slog.WarnContext(ctx, "queue health", "health", h) logs it in one call.
func (h Health) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 7)
	attrs = append(attrs, slog.Bool("reachable", h.Reachable))
	if !h.Since.IsZero() {
		attrs = append(attrs, slog.Time("since", h.Since))
	}
	if h.Reconnects != 0 {
		attrs = append(attrs, slog.Uint64("reconnects", h.Reconnects))
	}
	if h.Losses != 0 {
		attrs = append(attrs, slog.Uint64("losses", h.Losses))
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

// Health returns the queue's Health. It makes no backend call, so it
// answers at once even when the backend cannot be reached, and after Close.
func (q *Queue[T]) Health() Health {
	if q.backend == nil {
		panic(zeroQueue)
	}
	return q.withCounts(healthOf(q.hl.State()))
}

// withCounts returns h with the counts the backend keeps filled in: Reconnects and Losses.
func (q *Queue[T]) withCounts(h Health) Health {
	if r, ok := q.backend.(driver.Reconnecter); ok {
		h.Reconnects = r.Reconnects()
	}
	if q.losses != nil { // looked for once, by New
		h.Losses = q.losses.Losses()
	}
	return h
}

// observe records the outcome of a backend call made by the caller's
// goroutine (see health.Tracker.Observe), and calls the OnHealth hook if it
// changed Reachable.
func (q *Queue[T]) observe(ctx context.Context, err error) {
	if quiet(&q.hl, err) {
		return
	}
	if h, changed := q.hl.Observe(ctx, err); changed {
		q.healthChanged(ctx, healthOf(h))
	}
}

// quiet reports whether hl has nothing to record of err (see
// health.Tracker.Quiet): the callers on every job's path ask it before
// calling observe. (A function, not a method of the generic Queue: so that
// Quiet is inlined in them.)
func quiet(hl *health.Tracker, err error) bool { return hl.Quiet(err) }

// healthOf returns the Health of s, without the backend's counts (see withCounts).
func healthOf(s health.State) Health {
	return Health{Reachable: s.Reachable, Since: s.Since, LastError: s.LastError, LastErrorAt: s.LastErrorAt, Paused: s.Paused}
}

// lossesGrew reports whether the backend's Losses grew since the hook last learned them, and
// takes the growth: of calls that find one growth at once, one reports it. It is asked after
// the backend calls that may find a loss (a consumer's Receive, Stats, Drain's Stats), once
// their outcome was observed.
func (q *Queue[T]) lossesGrew() bool {
	if q.losses == nil {
		return false
	}
	n := q.losses.Losses()
	for seen := q.lossSeen.Load(); n > seen; seen = q.lossSeen.Load() {
		if q.lossSeen.CompareAndSwap(seen, n) {
			return true
		}
	}
	return false
}

// lossFound calls the OnHealth hook (after WithLogger's record of the loss) with the queue's
// Health, the backend's counts filled in.
func (q *Queue[T]) lossFound(ctx context.Context, h Health) {
	if q.onLoss != nil {
		q.onLoss(ctx, q.withCounts(h))
	}
}

// healthChanged calls the OnHealth hook, with the backend's counts filled in.
func (q *Queue[T]) healthChanged(ctx context.Context, h Health) {
	if f := q.hooks.OnHealth; f != nil {
		f(ctx, q.withCounts(h))
	}
}
