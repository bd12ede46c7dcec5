package latency

import (
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/bucket"
)

// A Recorder records durations from any number of goroutines at once, into the buckets of a
// Histogram, with atomic additions: Record takes no lock and does not allocate. The zero value
// is ready to use. A Recorder must not be copied after first use.
//
// Record and Snapshot are safe for concurrent use. Every Record call that happens before a
// Snapshot call (in the sense of the Go memory model) is in that snapshot, whole. A Record
// concurrent with a Snapshot may be in it in part: its count but not yet its duration in Sum
// and Max, or the other way round. Counts never go back: each bucket of a snapshot counts at
// least as many durations as the same bucket of any snapshot that happened before it.
type Recorder struct {
	counts [Buckets]atomic.Uint64
	sum    atomic.Int64
	max    atomic.Int64
}

// Record adds d to the recorder. A negative d is recorded as 0.
func (r *Recorder) Record(d time.Duration) {
	d = max(d, 0)
	r.counts[bucket.Of(d)].Add(1)
	r.sum.Add(int64(d))
	for m := r.max.Load(); int64(d) > m; m = r.max.Load() {
		if r.max.CompareAndSwap(m, int64(d)) {
			break
		}
	}
}

// Snapshot returns the durations recorded so far as a Histogram, whose Count is the sum of its
// Counts.
func (r *Recorder) Snapshot() Histogram {
	var h Histogram
	for i := range r.counts {
		n := r.counts[i].Load()
		h.Counts[i] = n
		h.Count += n
	}
	h.Sum = time.Duration(r.sum.Load())
	h.Max = time.Duration(r.max.Load())
	return h
}
