package latency_test

import (
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/latency"
)

// A Recorder used by one goroutine holds exactly what a Histogram would.
func TestRecorderMatchesHistogram(t *testing.T) {
	var r latency.Recorder
	var h latency.Histogram
	if s := r.Snapshot(); s != h {
		t.Fatalf("zero Recorder's snapshot %+v", s)
	}
	for i := range 3000 {
		d := time.Duration(i*i*i) - 5000 // some negative
		r.Record(d)
		h.Record(d)
	}
	if s := r.Snapshot(); s != h {
		t.Fatalf("snapshot %+v\nwant %+v", s, h)
	}
}

// Concurrent Records lose no count: snapshots taken meanwhile never count less in any bucket
// than the one before, never more than was recorded, and each has Count equal to the sum of its
// Counts; once every Record has returned, the snapshot is exactly the histogram of all of them.
func TestRecorderConcurrent(t *testing.T) {
	const writers, each = 4, 200_000
	// Every writer records the same durations, spread over many buckets and over one hot one.
	durations := make([]time.Duration, each)
	for i := range durations {
		if i%8 == 0 {
			durations[i] = time.Duration(i) * 37 * time.Microsecond
		} else {
			durations[i] = time.Microsecond
		}
	}
	var want latency.Histogram
	for range writers {
		for _, d := range durations {
			want.Record(d)
		}
	}

	var r latency.Recorder
	var wg sync.WaitGroup
	start := make(chan struct{}) // the writers start together, to contend
	for range writers {
		wg.Go(func() {
			<-start
			for _, d := range durations {
				r.Record(d)
			}
		})
	}
	stop := make(chan struct{})
	snapshots := 0
	reader := make(chan error, 1)
	go func() {
		defer close(reader)
		var prev latency.Histogram
		for {
			s := r.Snapshot()
			snapshots++
			var sum uint64
			for i, n := range s.Counts {
				sum += n
				if n < prev.Counts[i] || n > want.Counts[i] {
					t.Errorf("snapshot %d: bucket %d counts %d, before %d, recorded at most %d",
						snapshots, i, n, prev.Counts[i], want.Counts[i])
					return
				}
			}
			if sum != s.Count || s.Sum > want.Sum || s.Max > want.Max {
				t.Errorf("snapshot %d: Count %d, sum of Counts %d, Sum %v (at most %v), Max %v (at most %v)",
					snapshots, s.Count, sum, s.Sum, want.Sum, s.Max, want.Max)
				return
			}
			prev = s
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	close(start)
	wg.Wait()
	close(stop)
	<-reader
	if s := r.Snapshot(); s != want {
		t.Fatalf("after every Record: %d recorded (want %d), Sum %v (want %v), Max %v (want %v)",
			s.Count, want.Count, s.Sum, want.Sum, s.Max, want.Max)
	}
}
