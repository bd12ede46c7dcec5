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
