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

// NonZero returns the group of the attributes whose values are not zero (an empty string, a
// zero number or duration, a zero time, false, a nil any): an event's LogValue, which logs
// only what the event says.
func NonZero(attrs ...slog.Attr) slog.Value {
	out := make([]slog.Attr, 0, len(attrs))
	for _, a := range attrs {
		if !zero(a.Value) {
			out = append(out, a)
		}
	}
	return slog.GroupValue(out...)
}

// zero reports whether v is its kind's zero value.
func zero(v slog.Value) bool {
	switch v.Kind() {
	case slog.KindString:
		return v.String() == ""
	case slog.KindInt64:
		return v.Int64() == 0
	case slog.KindUint64:
		return v.Uint64() == 0
	case slog.KindFloat64:
		return v.Float64() == 0
	case slog.KindDuration:
		return v.Duration() == 0
	case slog.KindTime:
		return v.Time().IsZero()
	case slog.KindBool:
		return !v.Bool()
	case slog.KindAny:
		return v.Any() == nil
	}
	return false
}
