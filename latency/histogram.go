package latency

import (
	"math"
	"strconv"
	"time"

	"github.com/corral-go/corral/internal/bucket"
)

// Buckets is the number of buckets of every Histogram: 8 for each power of two of nanoseconds
// from 2^10 to 2^45, one below (shorter than 1.024µs) and one above (2^45 ns and longer).
const Buckets = bucket.N

// UpperBound returns the exclusive upper bound of bucket i, which is also the lower bound of
// bucket i+1: bucket i holds the durations d with UpperBound(i-1) <= d < UpperBound(i) (0 <= d
// for i == 0). The bounds increase strictly with i. The last bucket has no upper bound:
// UpperBound(Buckets-1) is math.MaxInt64, to be exported as +Inf. UpperBound panics if i is
// not in [0, Buckets).
func UpperBound(i int) time.Duration {
	if i < 0 || i >= Buckets {
		panic("latency: UpperBound(" + strconv.Itoa(i) + "): no such bucket")
	}
	if i == Buckets-1 {
		return math.MaxInt64
	}
	return bucket.Lower(i + 1)
}

// A Histogram counts durations in the fixed buckets described in the package doc, with their
// number, sum and maximum. The zero value is an empty histogram, ready to use.
//
// A Histogram is a plain value: copying it copies its counts, and == compares them. It is not
// safe for concurrent use: Record and Merge must not run at the same time as any other use of
// the same Histogram. To record from many goroutines, use a Recorder.
type Histogram struct {
	// Count is the number of durations recorded: the sum of Counts.
	Count uint64
	// Sum is the sum of the durations recorded.
	Sum time.Duration
	// Max is the longest duration recorded (0 if none).
	Max time.Duration
	// Counts[i] is the number of durations recorded in bucket i (see UpperBound).
	Counts [Buckets]uint64
}

// Record adds d to the histogram. A negative d is recorded as 0.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.Counts[bucket.Of(d)]++
	h.Count++
	h.Sum += d
	h.Max = max(h.Max, d)
}

// Merge adds the durations of o to h, as if each had been recorded in h: the counts and sums
// add up, and Max is the larger of the two.
func (h *Histogram) Merge(o Histogram) {
	for i, n := range o.Counts {
		h.Counts[i] += n
	}
	h.Count += o.Count
	h.Sum += o.Sum
	h.Max = max(h.Max, o.Max)
}

// Mean returns Sum / Count, or 0 if Count is 0.
func (h Histogram) Mean() time.Duration {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / time.Duration(h.Count)
}

// Quantile returns an estimate of the q-quantile of the recorded durations: of the
// ⌈q·Count⌉-th smallest (the smallest for q == 0), within the error the package doc states.
// Quantile(0.5) is the median, Quantile(0.99) the 99th percentile, and Quantile(1) is Max. It
// returns 0 if Count is 0, and panics if q is not in [0, 1].
func (h Histogram) Quantile(q float64) time.Duration {
	if !(q >= 0 && q <= 1) { // NaN too
		panic("latency: Quantile(" + strconv.FormatFloat(q, 'g', -1, 64) + "): q must be in [0, 1]")
	}
	if h.Count == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(h.Count))), 1)
	if rank >= h.Count {
		return h.Max
	}
	var seen uint64
	for i, n := range h.Counts {
		seen += n
		if seen >= rank {
			return min(midpoint(i), h.Max)
		}
	}
	return h.Max // Counts sum to less than Count: a histogram built by hand
}

// midpoint is the estimate of a duration in bucket i: the middle of its bounds, or, for the
// last bucket, which has no upper bound, the largest duration (Quantile lowers it to Max).
func midpoint(i int) time.Duration {
	if i == Buckets-1 {
		return math.MaxInt64
	}
	lo := bucket.Lower(i)
	return lo + (bucket.Lower(i+1)-lo)/2
}
