package sample_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/sample"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The first event is taken; then one in Mean, in gaps that vary from 0 to 2*(Mean-1).
func TestTake(t *testing.T) {
	var s sample.Sampler
	if !s.Take() {
		t.Fatal("the first event was not taken")
	}
	const n = 1 << 20
	taken, gap, minGap, maxGap := 0, 0, n, 0
	gaps := map[int]bool{}
	for range n {
		if !s.Take() {
			gap++
			continue
		}
		taken++
		minGap, maxGap = min(minGap, gap), max(maxGap, gap)
		gaps[gap] = true
		gap = 0
	}
	// 16,384 expected; the gaps are uniform over 127 values, so the count is within a
	// few percent of it: 5% either way is far beyond their spread and far from a
	// sampler that takes every event, none, or one in 32 or 128.
	if want := n / sample.Mean; taken < want*95/100 || taken > want*105/100 {
		t.Fatalf("took %d of %d events, want about %d", taken, n, want)
	}
	if minGap != 0 || maxGap != 2*(sample.Mean-1) || len(gaps) != 2*sample.Mean-1 {
		t.Fatalf("gaps from %d to %d, %d distinct; want 0 to %d, all %d of them",
			minGap, maxGap, len(gaps), 2*(sample.Mean-1), 2*sample.Mean-1)
	}
}

// Two samplers take the same events: a run is reproducible.
func TestReproducible(t *testing.T) {
	var a, b sample.Sampler
	for i := range 10000 {
		if a.Take() != b.Take() {
			t.Fatalf("event %d: the samplers differ", i)
		}
	}
}

// A stream that repeats itself every Mean events is not sampled in step with it: every
// position of the period is taken.
func TestNotInStep(t *testing.T) {
	var s sample.Sampler
	var seen [sample.Mean]int
	for i := range 1 << 20 {
		if s.Take() {
			seen[i%sample.Mean]++
		}
	}
	for pos, n := range seen {
		if n == 0 {
			t.Fatalf("position %d of the period never taken: %v", pos, seen)
		}
	}
}

func BenchmarkTake(b *testing.B) {
	var s sample.Sampler
	n := 0
	for range b.N {
		if s.Take() {
			n++
		}
	}
	if n == 0 {
		b.Fatal("nothing taken")
	}
}
