package queue

import (
	"context"
	"log/slog"
	"runtime/pprof"

	"github.com/corral-go/corral/internal/hooks"
)

// WithName names the queue: the worker goroutines of its consumers carry the pprof label
// queue=name (so a CPU or goroutine profile groups handler runs by queue), and
// [WithLogger]'s records carry the attribute queue=name. Jobs are never told apart in labels
// (no job IDs), so that the labels stay few. Without a name, the workers carry the labels of
// the goroutine that called Consume. It panics if name is empty.
func WithName(name string) Option {
	if name == "" {
		panic(`queue: WithName(""): empty name`)
	}
	return optionFunc(func(o *options) { o.name = name })
}

// WithLogger logs the queue's events to l, each with the attribute event (an [Event] or
// [Health] group) and, if the queue is named ([WithName]), queue:
//
//	slog.LevelDebug  "queue: job enqueued", "queue: job started", "queue: job succeeded"
//	slog.LevelWarn   "queue: job retried", "queue: job dropped", "queue: dead letter evicted",
//	                 "queue: backend unreachable"
//	slog.LevelError  "queue: job dead", "queue: broker lost stored jobs" (Health.Losses grew)
//	slog.LevelInfo   "queue: backend reachable"
//
// A record is logged where and when the [Hooks] field of the same event is called, with its
// ctx, and before that hook (set by [WithHooks], which still is called). The events of a level
// that l does not enable (asked once, by New, with a background context) cost nothing: with
// the Debug records off, a consumer's handler runs log nothing and call nothing more. Logging
// does not time handler runs: an Event's duration is logged only when the queue is timed
// ([WithTimings], or an OnSuccess, OnRetry or OnDead hook). A nil l means no logging, as
// without the option.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) { o.logger = l })
}

// logHooks returns the hooks that log to o.logger, each chained before o.hooks' own, and
// the hook to call, in place of OnHealth, when the backend's Losses grew: OnHealth chained
// after the record of the loss.
func (o *options) logHooks() (Hooks, func(context.Context, Health)) {
	l := hooks.Named(o.logger, "queue", o.name)
	if l == nil {
		return o.hooks, o.hooks.OnHealth
	}
	on := func(level slog.Level, msg string) func(context.Context, Event) {
		return hooks.Log[Event](l, level, msg)
	}
	var onHealth func(context.Context, Health)
	if l.Enabled(context.Background(), slog.LevelWarn) {
		onHealth = func(ctx context.Context, h Health) {
			level, msg := slog.LevelInfo, "queue: backend reachable"
			if !h.Reachable {
				level, msg = slog.LevelWarn, "queue: backend unreachable"
			}
			l.LogAttrs(ctx, level, msg, slog.Any("event", h))
		}
	}
	h := o.hooks
	onLoss := hooks.Chain(hooks.Log[Health](l, slog.LevelError, "queue: broker lost stored jobs"), h.OnHealth)
	return Hooks{
		OnEnqueue:     hooks.Chain(on(slog.LevelDebug, "queue: job enqueued"), h.OnEnqueue),
		OnStart:       hooks.Chain(on(slog.LevelDebug, "queue: job started"), h.OnStart),
		OnSuccess:     hooks.Chain(on(slog.LevelDebug, "queue: job succeeded"), h.OnSuccess),
		OnRetry:       hooks.Chain(on(slog.LevelWarn, "queue: job retried"), h.OnRetry),
		OnDead:        hooks.Chain(on(slog.LevelError, "queue: job dead"), h.OnDead),
		OnDrop:        hooks.Chain(on(slog.LevelWarn, "queue: job dropped"), h.OnDrop),
		OnDeadEvicted: hooks.Chain(on(slog.LevelWarn, "queue: dead letter evicted"), h.OnDeadEvicted),
		OnHealth:      hooks.Chain(onHealth, h.OnHealth),
	}, onLoss
}

// labelled gives the calling goroutine the queue's pprof labels, if it is named. Called as a
// consumer's worker goroutine starts: labels are set once per goroutine, not per job.
func (q *Queue[T]) labelled() {
	if q.labels != nil {
		pprof.SetGoroutineLabels(q.labels)
	}
}
