package proflabels_test

import (
	"context"
	"runtime/pprof"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/proflabels"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func labelledProbe(t *testing.T) string {
	l, err := proflabels.Of("proflabels_test.labelledProbe")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestOfReadsTheCallersLabels(t *testing.T) {
	if got := labelledProbe(t); got != "" {
		t.Fatalf("labels = %q, want none", got)
	}
	pprof.Do(context.Background(), pprof.Labels("pool", "img"), func(context.Context) {
		if got, want := labelledProbe(t), `{"pool":"img"}`; got != want {
			t.Fatalf("labels = %q, want %q", got, want)
		}
	})
}

func TestOfNoMatch(t *testing.T) {
	if _, err := proflabels.Of("no such function anywhere"); err == nil {
		t.Fatal("Of found labels for a function that does not run")
	}
}
