package stats_test

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/clock"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/stats"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A run's wait counts from EnqueuedAt, or from a later NotBefore, and is
// never negative; EndToEnd is Wait + Run.
func TestRecord(t *testing.T) {
	var l stats.Latencies
	epoch := clock.Start()
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d - epoch.At(t0)) } // epoch.At(at(d)) == d
	for _, c := range []struct {
		m          driver.Message
		start, end time.Duration
	}{
		{driver.Message{EnqueuedAt: at(time.Second)}, 3 * time.Second, 4 * time.Second},                                  // waits 2s
		{driver.Message{EnqueuedAt: at(time.Second), NotBefore: at(2 * time.Second)}, 3 * time.Second, 5 * time.Second},  // 1s
		{driver.Message{EnqueuedAt: at(time.Second), NotBefore: at(time.Millisecond)}, 3 * time.Second, 3 * time.Second}, // 2s
		{driver.Message{EnqueuedAt: at(time.Hour)}, time.Second, 2 * time.Second},                                        // 0, not -59m59s
	} {
		if run := l.Record(&c.m, epoch, c.start, c.end); run != c.end-c.start {
			t.Errorf("%+v: run %v, want %v", c, run, c.end-c.start)
		}
	}
	w, r, e := l.Wait.Snapshot(), l.Run.Snapshot(), l.EndToEnd.Snapshot()
	if w.Count != 4 || r.Count != 4 || e.Count != 4 {
		t.Fatalf("counts %d, %d, %d; want 4 each", w.Count, r.Count, e.Count)
	}
	if w.Sum != 5*time.Second || r.Sum != 4*time.Second || e.Sum != w.Sum+r.Sum {
		t.Errorf("sums: wait %v, run %v, end to end %v; want 5s, 4s, 9s", w.Sum, r.Sum, e.Sum)
	}
}

// Each reason has a counter of its own, and DeadLettered lists every
// reason; counting from goroutines at once loses nothing.
func TestDeadLettered(t *testing.T) {
	var c stats.Counters
	all := []driver.Reason{driver.ReasonAttempts, driver.ReasonPermanent, driver.ReasonPanic,
		driver.ReasonEvicted, driver.ReasonExpired, driver.ReasonDecode, driver.ReasonVersion,
		driver.ReasonCanceled, driver.ReasonSnoozes}
	var wg sync.WaitGroup
	for i, r := range all {
		wg.Go(func() {
			for range (i + 1) * 100 {
				c.Dead(r).Add(1)
			}
		})
	}
	wg.Wait()
	m := c.DeadLettered()
	if len(m) != len(all) {
		t.Fatalf("DeadLettered has %d reasons, want %d: %v", len(m), len(all), m)
	}
	for i, r := range all {
		if m[r] != uint64((i+1)*100) {
			t.Errorf("%s: %d, want %d", r, m[r], (i+1)*100)
		}
	}
}

// Shards merge the runs of every shard exactly; workers of indices that
// are equal modulo Count share a shard.
func TestShards(t *testing.T) {
	var s stats.Shards
	epoch := clock.Start()
	m := driver.Message{EnqueuedAt: time.Now()}
	start := epoch.At(m.EnqueuedAt)
	if snap := s.Snapshot(); snap != (stats.Snapshot{}) {
		t.Fatalf("zero Shards: %+v", snap)
	}
	a, b := s.Shard(0), s.Shard(1)
	if a == b || s.Shard(stats.Count) != a || s.Shard(stats.Count+1) != b {
		t.Fatal("shards not taken by index modulo Count")
	}
	a.Record(&m, epoch, start+time.Second, start+3*time.Second) // waits 1s, runs 2s
	b.Record(&m, epoch, start+2*time.Second, start+6*time.Second)
	b.Record(&m, epoch, start, start+time.Millisecond)
	snap := s.Snapshot()
	if snap.Wait.Count != 3 || snap.Run.Count != 3 || snap.EndToEnd.Count != 3 ||
		snap.Wait.Sum != 3*time.Second || snap.Run.Sum != 6*time.Second+time.Millisecond ||
		snap.EndToEnd.Sum != 9*time.Second+time.Millisecond || snap.Run.Max != 4*time.Second || snap.Wait.Max != 2*time.Second {
		t.Fatalf("wait %d %v max %v, run %d %v max %v, end to end %d %v",
			snap.Wait.Count, snap.Wait.Sum, snap.Wait.Max, snap.Run.Count, snap.Run.Sum, snap.Run.Max,
			snap.EndToEnd.Count, snap.EndToEnd.Sum)
	}
}

// Workers taking shards and recording into them while a reader takes
// snapshots: every snapshot's count is at least the one before, and the
// last is exact (run it with -race).
func TestShardsConcurrent(t *testing.T) {
	const workers, runs = 2 * stats.Count, 2000
	var s stats.Shards
	epoch := clock.Start()
	m := driver.Message{EnqueuedAt: time.Now()}
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for range runs {
				s.Shard(i).Record(&m, epoch, time.Millisecond, 2*time.Millisecond)
			}
		})
	}
	var last uint64
	for range 100 {
		snap := s.Snapshot()
		if snap.Run.Count < last {
			t.Fatalf("the run count went back from %d to %d", last, snap.Run.Count)
		}
		last = snap.Run.Count
	}
	wg.Wait()
	if snap := s.Snapshot(); snap.Run.Count != workers*runs || snap.Run.Sum != workers*runs*time.Millisecond {
		t.Fatalf("%d runs, sum %v; want %d, %v", snap.Run.Count, snap.Run.Sum,
			workers*runs, workers*runs*time.Millisecond)
	}
}
