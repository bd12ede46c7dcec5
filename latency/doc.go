// Package latency records durations in a fixed-bucket histogram from which quantiles (p50, p95,
// p99) are read, and which adds up across goroutines, pools, queues and processes.
//
// A [Histogram] is a plain value: a count per bucket, the number of durations, their sum and
// the longest. Its Record is for an owner that already serialises its updates (a mutex it
// holds anyway); a [Recorder] records from any number of goroutines at once, with atomic
// additions and no lock, and returns a Histogram from Snapshot. Neither allocates.
//
//	var r latency.Recorder // in a struct that lives as long as what it measures
//	start := time.Now()
//	handle(req)
//	r.Record(time.Since(start))
//	...
//	h := r.Snapshot()
//	p99 := h.Quantile(0.99)
//
// # Buckets
//
// Every Histogram has the same [Buckets] buckets, so any two merge by adding their counts. The
// bounds are log-linear: each power of two of nanoseconds from 2^10 ns (1.024µs) to 2^45 ns
// (about 9h46m) is split into 8 buckets of equal width. Below them, bucket 0 holds the
// durations shorter than 1.024µs (a negative duration is recorded as 0); above them, the last
// bucket holds those of 2^45 ns and longer. Bucket i holds the durations d with
// UpperBound(i-1) <= d < UpperBound(i) (0 <= d for i == 0); see [UpperBound].
//
// # Error of a quantile
//
// Quantile(q) of n recorded durations estimates the ⌈q·n⌉-th smallest of them (the smallest for
// q == 0), call it v. The bucket that holds v is known exactly from the counts; the estimate is
// that bucket's midpoint, lowered to Max if Max is smaller. So:
//
//   - for 1.024µs <= v < 2^45 ns the estimate is within v/16 of v (a relative error of at most
//     6.25%);
//   - for v < 1.024µs it is within 512ns of v;
//   - for v >= 2^45 ns it is Max.
//
// Quantile(1) is Max exactly.
package latency

// Where things are: histogram.go holds Histogram and the bounds, recorder.go the Recorder;
// internal/bucket the layout (which pool uses too).
