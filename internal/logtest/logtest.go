// Package logtest makes the slog loggers of corral's tests: records as text without the time,
// so that a test compares what was logged exactly.
package logtest

import (
	"io"
	"log/slog"
)

// Text returns a logger that writes the records at level and above to w, as
// slog.TextHandler does, without their time.
func Text(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}
