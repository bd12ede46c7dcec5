package hooks

import (
	"context"
	"log/slog"
)

// Log returns a hook that logs msg at level to l, with the event as the attribute "event", and
// the hook's ctx. It returns nil, a hook that costs nothing, if l does not enable level (asked
// once, now, with a background context).
func Log[E any](l *slog.Logger, level slog.Level, msg string) func(context.Context, E) {
	if !l.Enabled(context.Background(), level) {
		return nil
	}
	return func(ctx context.Context, e E) { l.LogAttrs(ctx, level, msg, slog.Any("event", e)) }
}

// Named returns l with the attribute key=name, l itself if name is "", and nil if l is nil:
// the logger of a WithLogger option, for a pool or queue that WithName may have named.
func Named(l *slog.Logger, key, name string) *slog.Logger {
	if l == nil || name == "" {
		return l
	}
	return l.With(slog.String(key, name))
}
