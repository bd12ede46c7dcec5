package hooks_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/corral-go/corral/internal/hooks"
)

func TestLogWritesOneRecordAtItsLevel(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level:       slog.LevelWarn,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
	}))
	if hooks.Log[int](l, slog.LevelInfo, "quiet") != nil {
		t.Fatal("Log at a level the logger does not enable: a hook, want nil")
	}
	hooks.Log[int](l, slog.LevelError, "loud")(context.Background(), 7)
	if got, want := buf.String(), "level=ERROR msg=loud event=7\n"; got != want {
		t.Fatalf("record = %q, want %q", got, want)
	}
}

func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func TestNamed(t *testing.T) {
	if hooks.Named(nil, "pool", "p") != nil {
		t.Fatal("Named(nil, ...) != nil")
	}
	l := slog.New(slog.DiscardHandler)
	if hooks.Named(l, "pool", "") != l {
		t.Fatal(`Named(l, "pool", "") is not l`)
	}
	var buf bytes.Buffer
	named := hooks.Named(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
	})), "pool", "p")
	named.Info("m")
	if got, want := buf.String(), "level=INFO msg=m pool=p\n"; got != want {
		t.Fatalf("record = %q, want %q", got, want)
	}
}
