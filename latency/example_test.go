package latency_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/corral-go/corral/latency"
)

func Example() {
	var h latency.Histogram
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond) // 1ms, 2ms, ..., 100ms
	}
	fmt.Println("count", h.Count, "mean", h.Mean(), "max", h.Max)
	// The exact quantiles are 50ms, 95ms and 99ms: each estimate is within 1/16 of them.
	fmt.Println("p50", h.Quantile(0.5).Round(time.Millisecond))
	fmt.Println("p95", h.Quantile(0.95).Round(time.Millisecond))
	fmt.Println("p99", h.Quantile(0.99).Round(time.Millisecond))
	// Output:
	// count 100 mean 50.5ms max 100ms
	// p50 48ms
	// p95 96ms
	// p99 96ms
}

// Many goroutines record into one Recorder; a snapshot taken after they are done has them all.
func ExampleRecorder() {
	var r latency.Recorder
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for range 250 {
				r.Record(time.Duration(g+1) * time.Second)
			}
		})
	}
	wg.Wait()
	h := r.Snapshot()
	fmt.Println(h.Count, h.Sum, h.Max)
	// Output:
	// 1000 41m40s 4s
}

// Histograms from several consumers (or processes) add up.
func ExampleHistogram_Merge() {
	var a, b latency.Histogram
	a.Record(10 * time.Millisecond)
	b.Record(30 * time.Millisecond)
	var total latency.Histogram
	total.Merge(a)
	total.Merge(b)
	fmt.Println(total.Count, total.Mean(), total.Max)
	// Output:
	// 2 20ms 30ms
}

// An exporter (Prometheus, OpenTelemetry) reads the bounds once and the counts per bucket.
func ExampleUpperBound() {
	for i := range 3 {
		fmt.Println(i, latency.UpperBound(i))
	}
	fmt.Println(latency.Buckets-2, latency.UpperBound(latency.Buckets-2))
	// Output:
	// 0 1.024µs
	// 1 1.152µs
	// 2 1.28µs
	// 280 9h46m24.372088832s
}
