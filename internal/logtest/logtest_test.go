package logtest_test

import (
	"bytes"
	"log/slog"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTextDropsTheTimeAndLowerLevels(t *testing.T) {
	var buf bytes.Buffer
	l := logtest.Text(&buf, slog.LevelWarn)
	l.Info("quiet")
	l.Warn("loud", slog.Group("g", slog.Int("n", 1)))
	if got, want := buf.String(), "level=WARN msg=loud g.n=1\n"; got != want {
		t.Fatalf("logged %q, want %q", got, want)
	}
}
