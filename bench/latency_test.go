package bench

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-go/corral/latency"
)

// latencySamples are the durations the latency benchmarks record, in turn: exponentially
// distributed around 50µs, so that they spread over many buckets as real timings do.
var latencySamples = func() [1024]time.Duration {
	var s [1024]time.Duration
	r := rand.New(rand.NewPCG(1, 2))
	for i := range s {
		s[i] = time.Duration(r.ExpFloat64() * float64(50*time.Microsecond))
	}
	return s
}()

// lockedHistogram is the baseline: a plain histogram behind a mutex.
type lockedHistogram struct {
	mu sync.Mutex
	h  latency.Histogram
}

func (l *lockedHistogram) Record(d time.Duration) {
	l.mu.Lock()
	l.h.Record(d)
	l.mu.Unlock()
}

// BenchmarkLatencyRecord measures one Record from one goroutine: corral is latency.Recorder
// (atomic), corral/histogram the plain latency.Histogram that an owner holding a lock uses (a
// pool's Stats), baseline a histogram behind a sync.Mutex.
func BenchmarkLatencyRecord(b *testing.B) {
	b.Run("corral", func(b *testing.B) {
		var r latency.Recorder
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			r.Record(latencySamples[i&1023])
		}
	})
	b.Run("corral/histogram", func(b *testing.B) {
		var h latency.Histogram
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			h.Record(latencySamples[i&1023])
		}
		if h.Count == 0 {
			b.Fatal("nothing recorded")
		}
	})
	b.Run("baseline", func(b *testing.B) {
		var l lockedHistogram
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			l.Record(latencySamples[i&1023])
		}
	})
}

// BenchmarkLatencyRecordParallel is BenchmarkLatencyRecord with GOMAXPROCS goroutines
// recording into one histogram (b.RunParallel).
func BenchmarkLatencyRecordParallel(b *testing.B) {
	var seed atomic.Uint64
	b.Run("corral", func(b *testing.B) {
		var r latency.Recorder
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := seed.Add(97); pb.Next(); i++ {
				r.Record(latencySamples[i&1023])
			}
		})
	})
	b.Run("baseline", func(b *testing.B) {
		var l lockedHistogram
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := seed.Add(97); pb.Next(); i++ {
				l.Record(latencySamples[i&1023])
			}
		})
	})
}
