package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// A Config without a dead-letter limit keeps DefaultDeadLetterLimit.
func TestDeadLetterLimitDefault(t *testing.T) {
	m := open(t, driver.Config{})
	ctx := context.Background()
	for i := range driver.DefaultDeadLetterLimit + 5 {
		mustEnqueue(t, m, driver.Message{ID: fmt.Sprint(i)})
		d := receive(t, m)
		res, err := m.Bury(ctx, &d, driver.ReasonPermanent, driver.Attempt{Number: 1})
		if err != nil {
			t.Fatal(err)
		}
		if want := i >= driver.DefaultDeadLetterLimit; (len(res.DeadEvicted) == 1) != want {
			t.Fatalf("bury %d evicted %v", i, res.DeadEvicted)
		}
	}
	if s, _ := m.Stats(ctx); s.Dead != driver.DefaultDeadLetterLimit {
		t.Fatalf("%d dead letters, want %d", s.Dead, driver.DefaultDeadLetterLimit)
	}
}

// An empty Memory gives back what a deep queue took: its recycled records,
// its ring and its maps shrink to their keep sizes.
func TestMemoryTrimsWhenEmpty(t *testing.T) {
	m := open(t, driver.Config{})
	ctx := context.Background()
	const n = 20 * keepFree
	for i := range n {
		mustEnqueue(t, m, driver.Message{ID: fmt.Sprint("id", i), Key: fmt.Sprint("k", i)})
	}
	for range n {
		d := receive(t, m)
		if err := m.Ack(ctx, &d); err != nil {
			t.Fatal(err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	free := 0
	for e := m.free; e != nil; e = e.ln[onAll].next {
		free++
	}
	if free != keepFree || m.freeN != keepFree {
		t.Errorf("%d recycled entries kept (counted %d), want %d", free, m.freeN, keepFree)
	}
	if c := m.ready.ring.Cap(); c > 2*keepBuf {
		t.Errorf("ready ring keeps capacity %d, want at most %d", c, 2*keepBuf)
	}
	if m.idsPeak != 0 || m.keysPeak != 0 || len(m.keyFree) != 0 {
		t.Errorf("maps not made anew: ids peak %d, keys peak %d, %d free keys", m.idsPeak, m.keysPeak, len(m.keyFree))
	}
}

// The dedup horizon forgets expired IDs a batch at a time, never all at once
// under the lock, and its map is made anew once it has emptied.
func TestMemoryHorizonForgetsInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := open(t, driver.Config{DedupHorizon: time.Minute})
		ctx := context.Background()
		const n = 10 * seenChunk
		for i := range n {
			mustEnqueue(t, m, driver.Message{ID: fmt.Sprint("old", i)})
			d := receive(t, m)
			if err := m.Ack(ctx, &d); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Minute) // every ID expired, before the sweep is due
		mustEnqueue(t, m, driver.Message{ID: "new"})
		m.mu.Lock()
		left := len(m.seen.seen)
		m.mu.Unlock()
		if left != n-pruneBatch+1 {
			t.Fatalf("one enqueue left %d IDs, want %d: it forgets %d expired at most", left, n-pruneBatch+1, pruneBatch)
		}
		for i := 0; left > 1; i++ {
			mustEnqueue(t, m, driver.Message{ID: fmt.Sprint("new", i)})
			d := receive(t, m)
			if err := m.Ack(ctx, &d); err != nil {
				t.Fatal(err)
			}
			m.mu.Lock()
			left = len(m.seen.seen) - (i + 2) // the new ones are not expired
			m.mu.Unlock()
			if i > n {
				t.Fatal("the expired IDs are never forgotten")
			}
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.seen.peak > 4*seenChunk || m.seen.fifo.n != len(m.seen.seen) {
			t.Errorf("after forgetting: peak %d, %d in order, %d in the map", m.seen.peak, m.seen.fifo.n, len(m.seen.seen))
		}
	})
}

// An idle queue forgets its expired IDs too: a waiting receiver wakes for
// them, a batch at a time, and the map is dropped once empty.
func TestMemoryHorizonForgetsWhileIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := open(t, driver.Config{DedupHorizon: time.Minute})
		ctx := context.Background()
		for i := range 3 * seenChunk {
			mustEnqueue(t, m, driver.Message{ID: fmt.Sprint("id", i)})
			d := receive(t, m)
			if err := m.Ack(ctx, &d); err != nil {
				t.Fatal(err)
			}
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			var d driver.Delivery
			done <- m.Receive(rctx, time.Minute, &d)
		}()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		m.mu.Lock()
		left, seen := m.seen.fifo.n, m.seen.seen
		m.mu.Unlock()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Receive: %v", err)
		}
		if left != 0 || seen != nil {
			t.Fatalf("an idle queue still remembers %d expired IDs (map dropped: %v)", left, seen == nil)
		}
	})
}

// With no call at all, no receiver waiting and no enqueue, the backend's
// sweep forgets every expired ID within horizon + horizon/8 of its enqueue,
// sweepBatch at a time, and drops the map once empty; Close stops the
// sweep.
func TestMemoryHorizonForgetsWithoutCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const h = time.Minute
		m := open(t, driver.Config{DedupHorizon: h})
		ctx := context.Background()
		const n = 10 * sweepBatch
		for i := range n {
			mustEnqueue(t, m, driver.Message{ID: fmt.Sprint("old", i)})
			d := receive(t, m)
			if err := m.Ack(ctx, &d); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(h + h/8 - time.Nanosecond)
		synctest.Wait()
		m.mu.Lock()
		left := m.seen.fifo.n
		m.mu.Unlock()
		if left != n {
			t.Fatalf("%d IDs forgotten before the sweep was due, want 0", n-left)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		m.mu.Lock()
		left, inMap, dropped := m.seen.fifo.n, len(m.seen.seen), m.seen.seen == nil && m.seen.peak == 0
		m.mu.Unlock()
		if left != 0 || inMap != 0 || !dropped {
			t.Fatalf("after horizon + horizon/8 with no calls: %d IDs remembered (%d in the map, map dropped: %v), want 0 and dropped", left, inMap, dropped)
		}
		// The sweep is armed again by the next ID, and Close stops it.
		mustEnqueue(t, m, driver.Message{ID: "new"})
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * h)
		synctest.Wait()
		m.mu.Lock()
		left = m.seen.fifo.n
		m.mu.Unlock()
		if left != 1 {
			t.Errorf("a closed backend swept: %d IDs remembered, want 1", left)
		}
	})
}

// The sweep rebuilds a map that has shrunk a lot, not only one that has emptied: with the old
// IDs forgotten and a few young ones left, the map is made anew, small.
func TestMemoryHorizonSweepRebuildsAShrunkMap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const h = time.Minute
		m := open(t, driver.Config{DedupHorizon: h})
		defer m.Close(context.Background())
		const old, young = 10 * sweepBatch, 10
		for i := range old {
			mustEnqueue(t, m, driver.Message{ID: fmt.Sprint("old", i)})
		}
		time.Sleep(h / 2)
		for i := range young {
			mustEnqueue(t, m, driver.Message{ID: fmt.Sprint("young", i)})
		}
		time.Sleep(h/2 + h/8)
		synctest.Wait()
		m.mu.Lock()
		left, inMap, peak := m.seen.fifo.n, len(m.seen.seen), m.seen.peak
		m.mu.Unlock()
		if left != young || inMap != young {
			t.Fatalf("%d IDs remembered (%d in the map), want the %d young ones", left, inMap, young)
		}
		if peak > 4*seenChunk {
			t.Errorf("map not rebuilt: its peak is %d, want at most %d", peak, 4*seenChunk)
		}
	})
}
