package hooks_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

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

func TestNonZeroKeepsWhatIsSet(t *testing.T) {
	v := hooks.NonZero(slog.String("id", ""), slog.String("key", "k"), slog.Int("attempt", 0), slog.Int("n", 2),
		slog.Uint64("u", 0), slog.Float64("f", 0), slog.Duration("d", 0), slog.Duration("delay", 3),
		slog.Time("at", time.Time{}), slog.Bool("paused", false), slog.Bool("on", true),
		slog.Any("err", nil), slog.Any("cause", errors.New("x")))
	var got []string
	for _, a := range v.Group() {
		got = append(got, a.Key)
	}
	if strings.Join(got, " ") != "key n delay on cause" {
		t.Fatalf("NonZero kept %v; want key n delay on cause", got)
	}
}
