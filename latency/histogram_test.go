package latency_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/corral-go/corral/latency"
)

// exact returns the q-quantile as Quantile defines it: the ⌈q·n⌉-th smallest of sorted (the
// smallest for q == 0).
func exact(sorted []time.Duration, q float64) time.Duration {
	rank := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return sorted[rank-1]
}

// withinDocumentedError reports whether est is as close to v as the package doc promises.
func withinDocumentedError(est, v, maxd time.Duration) bool {
	diff := est - v
	if diff < 0 {
		diff = -diff
	}
	switch {
	case v < 1024:
		return diff <= 512
	case v < 1<<45:
		return diff <= v/16
	default:
		return est == maxd
	}
}

// samplers draw durations from distributions of different shapes.
var samplers = []struct {
	name string
	draw func(r *rand.Rand) time.Duration
}{
	{"log-uniform 1ns..20h", func(r *rand.Rand) time.Duration {
		return time.Duration(math.Exp(r.Float64() * math.Log(float64(20*time.Hour))))
	}},
	{"exponential mean 2ms", func(r *rand.Rand) time.Duration {
		return time.Duration(r.ExpFloat64() * float64(2*time.Millisecond))
	}},
	{"normal 50ms±5ms", func(r *rand.Rand) time.Duration {
		return time.Duration(r.NormFloat64()*float64(5*time.Millisecond) + float64(50*time.Millisecond))
	}},
	{"bimodal 300ns and 1s", func(r *rand.Rand) time.Duration {
		if r.IntN(10) == 0 {
			return time.Second + time.Duration(r.IntN(int(time.Millisecond)))
		}
		return time.Duration(200 + r.IntN(200))
	}},
	{"uniform 0..10µs", func(r *rand.Rand) time.Duration { return time.Duration(r.IntN(10_000)) }},
}

var quantiles = []float64{0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1}

// A quantile read from the histogram is within the documented error of the exact quantile of
// the samples, for samples of many shapes and sizes; Quantile(1) is Max.
func TestQuantileError(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range samplers {
		for _, n := range []int{1, 2, 7, 100, 10_000} {
			var h latency.Histogram
			samples := make([]time.Duration, n)
			for i := range samples {
				samples[i] = max(s.draw(r), 0)
				h.Record(samples[i])
			}
			slices.Sort(samples)
			for _, q := range quantiles {
				v, est := exact(samples, q), h.Quantile(q)
				if !withinDocumentedError(est, v, h.Max) {
					t.Errorf("%s, n=%d: Quantile(%g) = %v, exact %v: off by more than documented",
						s.name, n, q, est, v)
				}
			}
			if got := h.Quantile(1); got != samples[n-1] || h.Max != samples[n-1] {
				t.Errorf("%s, n=%d: Quantile(1) = %v, Max %v, want %v", s.name, n, got, h.Max, samples[n-1])
			}
		}
	}
}

// The estimate is the middle of the bucket, lowered to Max; exact values pin the arithmetic.
func TestQuantileExact(t *testing.T) {
	var h latency.Histogram
	for range 98 {
		h.Record(1000 * time.Microsecond) // bucket [983040ns, 1048576ns): middle 1015808ns
	}
	h.Record(3 * time.Second)   // bucket [11·2^28ns, 12·2^28ns): middle 3087007744ns
	h.Record(300 * time.Second) // the largest: read by Quantile(1)
	if got := h.Quantile(0.5); got != 1015808 {
		t.Errorf("p50 = %d, want 1015808", got)
	}
	if got := h.Quantile(0.99); got != 3087007744 {
		t.Errorf("p99 = %d, want 3087007744", got)
	}
	if got := h.Quantile(1); got != 300*time.Second {
		t.Errorf("p100 = %v, want 5m0s", got)
	}
	var one latency.Histogram
	one.Record(time.Millisecond) // middle of its bucket is above it: reads as Max
	if got := one.Quantile(0.5); got != time.Millisecond {
		t.Errorf("p50 of one 1ms = %v", got)
	}
	var long latency.Histogram
	long.Record(10 * time.Hour)
	long.Record(20 * time.Hour)
	long.Record(time.Second)
	if got := long.Quantile(0.5); got != 20*time.Hour {
		t.Errorf("p50 in the overflow bucket = %v, want Max (20h)", got)
	}
	var short latency.Histogram
	short.Record(100)
	short.Record(900)
	short.Record(1000)
	if got := short.Quantile(0); got != 512 {
		t.Errorf("p0 in the underflow bucket = %v, want 512ns", got)
	}
}

func TestQuantileEmptyAndRange(t *testing.T) {
	var h latency.Histogram
	if got := h.Quantile(0.99); got != 0 {
		t.Errorf("empty: Quantile(0.99) = %v", got)
	}
	if got := h.Mean(); got != 0 {
		t.Errorf("empty: Mean = %v", got)
	}
	for _, q := range []float64{-0.1, 1.01, math.NaN(), math.Inf(1)} {
		func() {
			defer func() {
				if v := recover(); v == nil {
					t.Errorf("Quantile(%g) did not panic", q)
				}
			}()
			h.Quantile(q)
		}()
	}
}

// Record keeps Count, Sum and Max; a negative duration counts as 0.
func TestRecord(t *testing.T) {
	var h latency.Histogram
	h.Record(-time.Second)
	h.Record(3 * time.Millisecond)
	h.Record(time.Millisecond)
	var want latency.Histogram
	want.Count, want.Sum, want.Max = 3, 4*time.Millisecond, 3*time.Millisecond
	want.Counts[0] = 1
	want.Counts[latency.BucketOf(time.Millisecond)] = 1
	want.Counts[latency.BucketOf(3*time.Millisecond)] = 1
	if h != want {
		t.Fatalf("got %+v\nwant %+v", h, want)
	}
	if got := h.Mean(); got != 4*time.Millisecond/3 {
		t.Errorf("Mean = %v", got)
	}
}

// Merging histograms gives the histogram of all their durations, whichever way they are split.
func TestMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var all, a, b, c latency.Histogram
	for i := range 5000 {
		d := samplers[0].draw(r)
		all.Record(d)
		[]*latency.Histogram{&a, &b, &c}[i%3].Record(d)
	}
	var m latency.Histogram
	m.Merge(a)
	m.Merge(b)
	m.Merge(c)
	m.Merge(latency.Histogram{})
	if m != all {
		t.Fatalf("merged %+v\nwant %+v", m, all)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	var h latency.Histogram
	var r latency.Recorder
	if n := testing.AllocsPerRun(100, func() {
		h.Record(time.Millisecond)
		r.Record(time.Millisecond)
	}); n != 0 {
		t.Fatalf("Record allocates: %v per call", n)
	}
}
