package retry

import (
	"log/slog"

	"github.com/corral-go/corral/internal/hooks"
)

// WithLogger logs a Policy's calls to l: a retry at slog.LevelWarn ("retry: retrying", with
// the attribute event, a [RetryEvent] group) and a call that gives up at slog.LevelError
// ("retry: gave up", with the attribute event, the [*Error]). The records are logged with the
// call's ctx, on the calling goroutine, before the [Hooks] set by [WithHooks] (which still are
// called). A level that l does not enable (asked once, by [New], with a background context)
// costs nothing. Logging does not time attempts: a RetryEvent's duration is logged only with
// a Hooks.OnRetry set. To tell policies apart, give each a logger of its own (l.With). A nil l
// means no logging, as without the option.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) { o.logger = l })
}

// logHooks returns the hooks that log to o.logger, chained before o.hooks' own.
func (o *options) logHooks() Hooks {
	l := o.logger
	if l == nil {
		return o.hooks
	}
	return Hooks{
		OnRetry:  hooks.Chain(hooks.Log[RetryEvent](l, slog.LevelWarn, "retry: retrying"), o.hooks.OnRetry),
		OnGiveUp: hooks.Chain(hooks.Log[*Error](l, slog.LevelError, "retry: gave up"), o.hooks.OnGiveUp),
	}
}
