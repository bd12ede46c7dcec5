package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/driver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemoryLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := New()
		if err := m.Open(ctx, driver.Config{Capacity: 2, Overflow: driver.Reject}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Enqueue(ctx, driver.Message{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Enqueue(ctx, driver.Message{ID: "a"}); err != driver.ErrDuplicate {
			t.Fatalf("second enqueue of a: %v, want ErrDuplicate", err)
		}
		if _, err := m.Enqueue(ctx, driver.Message{ID: "b", NotBefore: time.Now().Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Enqueue(ctx, driver.Message{ID: "c"}); err != driver.ErrFull {
			t.Fatalf("enqueue at capacity: %v, want ErrFull", err)
		}
		var d driver.Delivery
		if err := m.Receive(ctx, time.Minute, &d); err != nil || d.ID != "a" || d.Attempt != 1 {
			t.Fatalf("receive: %v %q attempt %d", err, d.ID, d.Attempt)
		}
		start := time.Now()
		var d2 driver.Delivery
		if err := m.Receive(ctx, time.Minute, &d2); err != nil || d2.ID != "b" {
			t.Fatalf("receive: %v %q", err, d2.ID)
		}
		if err := m.Start(ctx, &d2); err != nil { // a handler runs on b, and its process dies
			t.Fatal(err)
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("delayed job delivered after %v, want 1s", got)
		}
		if err := m.Ack(ctx, &d); err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(ctx, &d); err != driver.ErrLeaseLost {
			t.Fatalf("second ack: %v, want ErrLeaseLost", err)
		}
		// Lease expiry: b comes back with attempt 2 after its lease.
		var d3 driver.Delivery
		if err := m.Receive(ctx, time.Minute, &d3); err != nil || d3.ID != "b" || d3.Attempt != 2 {
			t.Fatalf("redelivery: %v %q attempt %d", err, d3.ID, d3.Attempt)
		}
		if got := time.Since(start); got != time.Second+time.Minute {
			t.Fatalf("redelivered after %v, want 1m1s", got)
		}
		if err := m.Ack(ctx, &d2); err != driver.ErrLeaseLost {
			t.Fatalf("ack of expired lease: %v, want ErrLeaseLost", err)
		}
		if _, err := m.Bury(ctx, &d3, driver.ReasonPermanent, driver.Attempt{Number: 2, Error: "boom"}); err != nil {
			t.Fatal(err)
		}
		var dead []driver.DeadMessage
		for dm, err := range m.DeadLetters(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			dead = append(dead, dm)
		}
		if len(dead) != 1 || dead[0].ID != "b" || len(dead[0].History) != 2 || dead[0].History[0].Error != driver.ErrLeaseExpired.Error() {
			t.Fatalf("dead letters: %+v", dead)
		}
		s, _ := m.Stats(ctx)
		if s != (driver.Stats{Dead: 1}) {
			t.Fatalf("stats %+v", s)
		}
	})
}

func open(t *testing.T, cfg driver.Config) *Backend {
	t.Helper()
	m := New()
	if err := m.Open(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustEnqueue(t *testing.T, m *Backend, msg driver.Message) driver.EnqueueResult {
	t.Helper()
	res, err := m.Enqueue(context.Background(), msg)
	if err != nil {
		t.Fatalf("Enqueue %s: %v", msg.ID, err)
	}
	return res
}

// mustEnqueueFresh enqueues msg as a job whose ID the queue generated
// (see driver.InProcess.EnqueueFresh).
func mustEnqueueFresh(t *testing.T, m *Backend, msg driver.Message) driver.EnqueueResult {
	t.Helper()
	res, err := m.EnqueueFresh(context.Background(), msg)
	if err != nil {
		t.Fatalf("Enqueue %s: %v", msg.ID, err)
	}
	return res
}

func receive(t *testing.T, m *Backend) driver.Delivery {
	t.Helper()
	var d driver.Delivery
	if err := m.Receive(context.Background(), time.Hour, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// receiveThenNext receives a job from m, then acks it and takes the next
// one with AckNext, leased for lease: that one must be want.
func receiveThenNext(t *testing.T, m *Backend, lease time.Duration, want string) driver.Delivery {
	t.Helper()
	d := receive(t, m)
	next, err := m.AckNext(context.Background(), &d, time.Now(), lease)
	if !next || err != nil || d.ID != want {
		t.Fatalf("AckNext = %v, %v, took %q; want true, nil, %s", next, err, d.ID, want)
	}
	return d
}

func TestMemoryOpen(t *testing.T) {
	m := open(t, driver.Config{})
	if err := m.Open(context.Background(), driver.Config{}); err == nil {
		t.Error("second Open succeeded")
	}
	for _, cfg := range []driver.Config{{Capacity: -1}, {DedupHorizon: -1}, {Overflow: driver.DropOldest + 1}} {
		if err := New().Open(context.Background(), cfg); err == nil {
			t.Errorf("Open(%+v) succeeded", cfg)
		}
	}
}

// DropOldest evicts the oldest job not in flight, wherever it sits: behind
// a busy key, delayed, or at the head of a key (which unblocks the next).
func TestMemoryDropOldestVictims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := open(t, driver.Config{Capacity: 3, Overflow: driver.DropOldest})
		mustEnqueue(t, m, driver.Message{ID: "k1", Key: "k"})
		mustEnqueue(t, m, driver.Message{ID: "k2", Key: "k"})
		mustEnqueue(t, m, driver.Message{ID: "k3", Key: "k", NotBefore: time.Now().Add(time.Minute)})
		d := receive(t, m) // k1 in flight
		if d.ID != "k1" {
			t.Fatalf("received %s, want k1", d.ID)
		}
		// k1 is in flight: the victim is k2, queued behind it.
		if res := mustEnqueue(t, m, driver.Message{ID: "x"}); len(res.Evicted) != 1 || res.Evicted[0] != "k2" {
			t.Fatalf("evicted %v, want [k2]", res.Evicted)
		}
		if err := m.Ack(ctx, &d); err != nil {
			t.Fatal(err)
		}
		// k3 is now the key's head, delayed a minute; x is ready.
		if s, _ := m.Stats(ctx); s != (driver.Stats{Ready: 1, Delayed: 1, Dead: 1, Oldest: s.Oldest}) {
			t.Fatalf("stats %+v", s)
		}
		mustEnqueue(t, m, driver.Message{ID: "y", Key: "k"}) // behind k3
		if res := mustEnqueue(t, m, driver.Message{ID: "z"}); len(res.Evicted) != 1 || res.Evicted[0] != "k3" {
			t.Fatalf("evicted %v, want [k3]", res.Evicted)
		}
		// Evicting the delayed head unblocked y, which is ready at once.
		var got []string
		for range 3 {
			got = append(got, receive(t, m).ID)
		}
		if want := []string{"x", "y", "z"}; !slices.Equal(got, want) {
			t.Fatalf("received %v, want %v", got, want)
		}
		// Everything in flight: nothing to evict.
		if _, err := m.Enqueue(ctx, driver.Message{ID: "w"}); err != driver.ErrFull {
			t.Fatalf("Enqueue with every job in flight: %v, want ErrFull", err)
		}
		var reasons []driver.Reason
		for dm := range m.DeadLetters(ctx) {
			reasons = append(reasons, dm.Reason)
		}
		if len(reasons) != 2 || reasons[0] != driver.ReasonEvicted || reasons[1] != driver.ReasonEvicted {
			t.Fatalf("dead letter reasons %v", reasons)
		}
	})
}

// A blocked producer whose ctx ends passes on a wake-up it was given, so
// the next blocked producer still gets the room.
func TestMemoryBlockedProducersShareRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := open(t, driver.Config{Capacity: 1, Overflow: driver.Block})
		mustEnqueue(t, m, driver.Message{ID: "a"})
		cctx, cancel := context.WithCancel(ctx)
		type result struct {
			id  string
			err error
		}
		results := make(chan result, 2)
		go func() { _, err := m.Enqueue(cctx, driver.Message{ID: "b"}); results <- result{"b", err} }()
		synctest.Wait()
		go func() { _, err := m.Enqueue(ctx, driver.Message{ID: "c"}); results <- result{"c", err} }()
		synctest.Wait()
		d := receive(t, m)
		if err := m.Ack(ctx, &d); err != nil { // room for one: wakes b
			t.Fatal(err)
		}
		cancel() // b, woken, may pick its ctx over the wake-up: then c must get the room
		synctest.Wait()
		got := map[string]error{}
		for len(results) > 0 {
			r := <-results
			got[r.id] = r.err
		}
		switch {
		case got["b"] == nil && len(got) == 1: // b took the room; c still waits
		case got["b"] != nil && len(got) == 2 && got["c"] == nil: // b gave up, c took the room
		default:
			t.Fatalf("after one slot freed: %v", got)
		}
		if s, _ := m.Stats(ctx); s.Ready != 1 {
			t.Fatalf("stats %+v: want 1 ready", s)
		}
		if len(got) == 1 {
			d := receive(t, m)
			if err := m.Ack(ctx, &d); err != nil {
				t.Fatal(err)
			}
			if r := <-results; r.id != "c" || r.err != nil {
				t.Fatalf("c: %v", r)
			}
		}
	})
}

func TestMemoryReleaseExtendRedrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := open(t, driver.Config{Capacity: 2, Overflow: driver.Reject, DedupHorizon: time.Hour})
		mustEnqueue(t, m, driver.Message{ID: "a"})
		d := receive(t, m)
		if err := m.Release(ctx, &d, 0); err != nil {
			t.Fatal(err)
		}
		if d = receive(t, m); d.Attempt != 1 {
			t.Fatalf("released job came back as attempt %d, want 1", d.Attempt)
		}
		time.Sleep(50 * time.Minute)
		if err := m.Extend(ctx, &d, time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Minute) // past the first lease, within the extension
		if s, _ := m.Stats(ctx); s.InFlight != 1 {
			t.Fatalf("stats %+v: the extended lease expired", s)
		}
		if _, err := m.Bury(ctx, &d, driver.ReasonPermanent, driver.Attempt{Number: 1}); err != nil {
			t.Fatal(err)
		}
		if err := m.Extend(ctx, &d, time.Hour); err != driver.ErrLeaseLost {
			t.Fatalf("Extend after Bury: %v, want ErrLeaseLost", err)
		}
		// Redrive skips the dedup horizon but not a stored ID or capacity.
		mustEnqueue(t, m, driver.Message{ID: "b"})
		mustEnqueue(t, m, driver.Message{ID: "c"})
		if err := m.Redrive(ctx, "a"); err != driver.ErrFull {
			t.Fatalf("Redrive when full: %v, want ErrFull", err)
		}
		d = receive(t, m)
		if err := m.Ack(ctx, &d); err != nil {
			t.Fatal(err)
		}
		if err := m.Redrive(ctx, "a"); err != nil {
			t.Fatalf("Redrive: %v", err)
		}
		if err := m.Redrive(ctx, "a"); err != driver.ErrNotFound {
			t.Fatalf("second Redrive: %v, want ErrNotFound", err)
		}
		if d = receive(t, m); d.ID != "c" {
			t.Fatalf("received %s, want c", d.ID)
		}
		if d = receive(t, m); d.ID != "a" || d.Attempt != 1 {
			t.Fatalf("received %s attempt %d, want a attempt 1", d.ID, d.Attempt)
		}
	})
}

// The dedup horizon forgets IDs in enqueue order and keeps its memory
// bounded by what it must remember.
func TestMemoryHorizonPruning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := open(t, driver.Config{DedupHorizon: time.Minute})
		for i := range 1000 {
			msg := driver.Message{ID: string(rune('a'+i%26)) + time.Now().Format("150405.000000000")}
			mustEnqueue(t, m, msg)
			d := receive(t, m)
			if err := m.Ack(ctx, &d); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
		}
		m.mu.Lock()
		m.seen.prune(time.Now(), time.Minute)
		n, fifo := len(m.seen.seen), m.seen.fifo.n
		m.mu.Unlock()
		if n != 59 || fifo != 59 {
			t.Fatalf("remembering %d IDs (%d in order), want the 59 younger than the horizon", n, fifo)
		}
	})
}

// Leases of different lengths expire in order of their end, whatever the
// order they were taken or renewed in.
func TestMemoryLeasesExpireInEndOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := open(t, driver.Config{})
		for _, id := range []string{"a", "b", "c"} {
			mustEnqueue(t, m, driver.Message{ID: id})
		}
		var a, b, c driver.Delivery
		for _, r := range []struct {
			d     *driver.Delivery
			lease time.Duration
		}{{&a, 10 * time.Second}, {&b, 2 * time.Second}, {&c, 5 * time.Second}} {
			if err := m.Receive(ctx, r.lease, r.d); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		if err := m.Extend(ctx, &b, 6*time.Second); err != nil { // b now ends at 7s
			t.Fatal(err)
		}
		start := time.Now()
		var got []string
		for range 3 {
			var d driver.Delivery
			if err := m.Receive(ctx, time.Hour, &d); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s@%v", d.ID, time.Since(start)+time.Second))
		}
		if want := []string{"c@5s", "b@7s", "a@10s"}; !slices.Equal(got, want) {
			t.Fatalf("redelivered %v, want %v", got, want)
		}
	})
}

// freshID is an ID as a queue generates it (see jobid.Generator).
func freshID(n int) string { return fmt.Sprintf("%016x%016x", 0xc0ffee, n) }

// Jobs on the inbox fast path (generated ID, no key, no delay) and jobs on
// the locked path keep their enqueue order, count against the capacity
// while still in the inbox, show in Stats, and are evicted oldest first.
func TestMemoryInboxOrderCapacityAndEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := open(t, driver.Config{Capacity: 4, Overflow: driver.Reject})
		mustEnqueueFresh(t, m, driver.Message{ID: freshID(1)})
		mustEnqueue(t, m, driver.Message{ID: "keyed", Key: "k"})
		mustEnqueueFresh(t, m, driver.Message{ID: freshID(2)})
		mustEnqueueFresh(t, m, driver.Message{ID: freshID(3)})
		if _, err := m.EnqueueFresh(ctx, driver.Message{ID: freshID(4)}); !errors.Is(err, driver.ErrFull) {
			t.Fatalf("fifth job into a capacity of 4: err %v, want ErrFull", err)
		}
		if s, _ := m.Stats(ctx); s.Ready != 4 {
			t.Fatalf("Stats.Ready %d, want 4", s.Ready)
		}
		var got []string
		for range 4 {
			d := receive(t, m)
			got = append(got, d.ID)
		}
		if want := []string{freshID(1), "keyed", freshID(2), freshID(3)}; !slices.Equal(got, want) {
			t.Fatalf("received %q, want %q", got, want)
		}

		m = open(t, driver.Config{Capacity: 2, Overflow: driver.DropOldest})
		mustEnqueueFresh(t, m, driver.Message{ID: freshID(1)})
		mustEnqueueFresh(t, m, driver.Message{ID: freshID(2)})
		res := mustEnqueueFresh(t, m, driver.Message{ID: freshID(3)})
		if !slices.Equal(res.Evicted, []string{freshID(1)}) {
			t.Fatalf("evicted %q, want the oldest, %q", res.Evicted, freshID(1))
		}
		if a, b := receive(t, m), receive(t, m); a.ID != freshID(2) || b.ID != freshID(3) {
			t.Fatalf("received %q, %q after the eviction, want %q, %q", a.ID, b.ID, freshID(2), freshID(3))
		}
	})
}

// A receiver waiting on an empty backend is woken by a job on the inbox
// fast path (the bubble would deadlock otherwise), and a later explicit
// enqueue of the same generated ID is a duplicate.
func TestMemoryInboxWakesReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := open(t, driver.Config{})
		got := make(chan string)
		go func() {
			var d driver.Delivery
			if err := m.Receive(ctx, time.Minute, &d); err != nil {
				t.Error(err)
			}
			got <- d.ID
		}()
		synctest.Wait()
		mustEnqueueFresh(t, m, driver.Message{ID: freshID(7)})
		if id := <-got; id != freshID(7) {
			t.Fatalf("received %q, want %q", id, freshID(7))
		}
		if _, err := m.Enqueue(ctx, driver.Message{ID: freshID(7)}); !errors.Is(err, driver.ErrDuplicate) {
			t.Fatalf("explicit enqueue of a stored generated ID: err %v, want ErrDuplicate", err)
		}
	})
}

// Producers of fresh jobs blocked on a full queue wait outside the main
// lock (waitRoom): each slot freed lets exactly one of them in, and every
// job they enqueue is delivered.
func TestMemoryBlockedFreshProducers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := open(t, driver.Config{Capacity: 1, Overflow: driver.Block})
		mustEnqueueFresh(t, m, driver.Message{ID: freshID(0)})
		done := make(chan error, 3)
		for i := 1; i <= 3; i++ {
			go func() {
				_, err := m.EnqueueFresh(ctx, driver.Message{ID: freshID(i)})
				done <- err
			}()
		}
		synctest.Wait()
		if len(done) != 0 {
			t.Fatalf("%d producers got in a full queue", len(done))
		}
		seen := map[string]bool{}
		for i := range 4 {
			d := receive(t, m)
			seen[d.ID] = true
			if err := m.Ack(ctx, &d); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if want := min(i+1, 3); len(done) != want {
				t.Fatalf("after %d acks, %d producers got in, want %d", i+1, len(done), want)
			}
		}
		for range 3 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if len(seen) != 4 {
			t.Fatalf("delivered %v, want 4 distinct jobs", seen)
		}
	})
}

// Dead letters keep their order through purges, redrives and replacements
// in the middle of the list, and a redriven job with a generated ID is
// found by its ID afterwards (Redrive no longer searches the stored jobs
// for generated IDs, so that redriving every dead letter is linear).
func TestMemoryDeadLettersOrderAndRedrive(t *testing.T) {
	ctx := context.Background()
	m := open(t, driver.Config{})
	ids := []string{freshID(1), freshID(2), freshID(3), freshID(4), freshID(5)}
	for _, id := range ids {
		mustEnqueueFresh(t, m, driver.Message{ID: id})
	}
	for range ids {
		d := receive(t, m)
		if _, err := m.Bury(ctx, &d, driver.ReasonPermanent, driver.Attempt{Number: 1}); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []string {
		var got []string
		for dm, err := range m.DeadLetters(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, dm.ID)
		}
		return got
	}
	if err := m.Purge(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	if err := m.Redrive(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := m.Redrive(ctx, ids[1]); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("second Redrive: %v, want ErrNotFound", err)
	}
	if _, err := m.Enqueue(ctx, driver.Message{ID: ids[1]}); !errors.Is(err, driver.ErrDuplicate) {
		t.Fatalf("enqueue of the redriven ID: %v, want ErrDuplicate", err)
	}
	// The redriven job dies again: its new dead letter goes last.
	d := receive(t, m)
	if d.ID != ids[1] {
		t.Fatalf("received %s, want the redriven %s", d.ID, ids[1])
	}
	if _, err := m.Bury(ctx, &d, driver.ReasonAttempts, driver.Attempt{Number: 1}); err != nil {
		t.Fatal(err)
	}
	// A job enqueued with a dead letter's ID blocks its redrive.
	mustEnqueue(t, m, driver.Message{ID: ids[0]})
	if err := m.Redrive(ctx, ids[0]); !errors.Is(err, driver.ErrDuplicate) {
		t.Fatalf("Redrive over a stored job: %v, want ErrDuplicate", err)
	}
	want := []string{ids[0], ids[3], ids[4], ids[1]}
	if got := list(); !slices.Equal(got, want) {
		t.Fatalf("dead letters %v, want %v", got, want)
	}
	if s, _ := m.Stats(ctx); s.Dead != 4 || s.Ready != 1 {
		t.Fatalf("stats %+v: want 4 dead, 1 ready", s)
	}
	if err := m.Purge(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := m.Purge(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if d = receive(t, m); d.ID != ids[0] || m.Ack(ctx, &d) != nil { // the job enqueued explicitly
		t.Fatalf("received %s, want %s acked", d.ID, ids[0])
	}
	mustEnqueueFresh(t, m, driver.Message{ID: freshID(6)})
	d = receive(t, m)
	if _, err := m.Bury(ctx, &d, driver.ReasonPermanent, driver.Attempt{Number: 1}); err != nil {
		t.Fatal(err)
	}
	if got, want := list(), []string{ids[3], ids[4], freshID(6)}; !slices.Equal(got, want) {
		t.Fatalf("after purging the ends and one more: %v, want %v", got, want)
	}
}

// A message handed out by Receive or DeadLetters does not pass for a job
// whose ID the queue just generated: enqueued again through the Backend, it
// is checked for duplicates like any other. (Found in review: the copies
// kept the flag, and such an enqueue stored a second job with the ID.)
func TestMemoryHandedOutMessagesAreNotFresh(t *testing.T) {
	ctx := context.Background()
	m := open(t, driver.Config{})
	mustEnqueueFresh(t, m, driver.Message{ID: freshID(1)})
	mustEnqueueFresh(t, m, driver.Message{ID: freshID(2)})
	d := receive(t, m)
	if _, err := m.Enqueue(ctx, d.Message); !errors.Is(err, driver.ErrDuplicate) {
		t.Fatalf("enqueue of a received message: %v, want ErrDuplicate", err)
	}
	d2 := receive(t, m)
	if _, err := m.Bury(ctx, &d2, driver.ReasonPermanent, driver.Attempt{Number: 1}); err != nil {
		t.Fatal(err)
	}
	for dm, err := range m.DeadLetters(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Enqueue(ctx, dm.Message); err != nil {
			t.Fatalf("enqueue of a dead letter's message: %v", err)
		}
		if err := m.Redrive(ctx, dm.ID); !errors.Is(err, driver.ErrDuplicate) {
			t.Fatalf("Redrive over the job enqueued from its message: %v, want ErrDuplicate", err)
		}
	}
	if s, _ := m.Stats(ctx); s.Ready != 1 || s.InFlight != 1 || s.Dead != 1 {
		t.Fatalf("stats %+v: want 1 ready, 1 in flight, 1 dead", s)
	}
}

// A job AckNext takes is leased as Receive leases it: for the lease given,
// from the reading of the clock given (here, the time of the call). Unsettled, it comes back
// when that lease ends (started, so with its attempt spent and a history
// entry for the run); the stale delivery then settles nothing.
func TestMemoryAckNextLeasesLikeReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := open(t, driver.Config{})
		ctx := context.Background()
		mustEnqueue(t, m, driver.Message{ID: "a", Value: "a"})
		mustEnqueue(t, m, driver.Message{ID: "b", Value: "b"})
		time.Sleep(time.Hour)
		d := receiveThenNext(t, m, time.Minute, "b")
		start := time.Now()
		if d.Attempt != 1 || d.Redelivered {
			t.Errorf("b taken with attempt %d, redelivered %v; want 1, false", d.Attempt, d.Redelivered)
		}
		if s, _ := m.Stats(ctx); s.InFlight != 1 || s.Ready != 0 {
			t.Fatalf("stats %+v: want b in flight", s)
		}
		if err := m.Start(ctx, &d); err != nil {
			t.Fatal(err)
		}
		var got driver.Delivery
		c, cancel := context.WithTimeout(ctx, 2*time.Hour)
		defer cancel()
		if err := m.Receive(c, time.Minute, &got); err != nil || got.ID != "b" || got.Attempt != 2 || time.Since(start) != time.Minute {
			t.Fatalf("after AckNext: %q attempt %d after %v (%v); want b, attempt 2, after 1m", got.ID, got.Attempt, time.Since(start), err)
		}
		if err := m.Ack(ctx, &d); !errors.Is(err, driver.ErrLeaseLost) {
			t.Errorf("Ack of the expired lease: %v, want ErrLeaseLost", err)
		}
		if _, err := m.Bury(ctx, &got, driver.ReasonPermanent, driver.Attempt{Number: 2, Error: "no"}); err != nil {
			t.Fatal(err)
		}
		var hist []driver.Attempt
		for dm, err := range m.DeadLetters(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			hist = dm.History
		}
		want := driver.Attempt{Number: 1, Start: start, End: start.Add(time.Minute), Error: driver.ErrLeaseExpired.Error()}
		if len(hist) != 2 || hist[0] != want {
			t.Fatalf("history %+v, want first %+v", hist, want)
		}
	})
}

// AckNext on a backend with no job ready acks and reports nothing taken;
// with a lease that is not positive it fails as Receive does, and acks
// nothing.
func TestMemoryAckNextEmptyAndBadLease(t *testing.T) {
	m := open(t, driver.Config{})
	ctx := context.Background()
	mustEnqueue(t, m, driver.Message{ID: "a"})
	d := receive(t, m)
	if next, err := m.AckNext(ctx, &d, time.Now(), 0); next || err == nil {
		t.Fatalf("AckNext with lease 0 = %v, %v; want an error", next, err)
	}
	if next, err := m.AckNext(ctx, &d, time.Now(), time.Minute); next || err != nil {
		t.Fatalf("AckNext with nothing ready = %v, %v; want false, nil", next, err)
	}
	if s, _ := m.Stats(ctx); s != (driver.Stats{}) {
		t.Fatalf("stats %+v: want a acked, nothing stored", s)
	}
	if next, err := m.AckNext(ctx, &d, time.Now(), time.Minute); next || !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("second AckNext = %v, %v; want ErrLeaseLost", next, err)
	}
}

// AckNext leases the job it takes from the caller's reading of the clock:
// with a reading taken 10s before the call, a 1m lease ends 50s after it
// (never later than a Receive's lease would end), and the run it records
// when it takes the job back starts at that reading. A zero reading is the
// backend's own: the lease ends 1m after the call.
func TestMemoryAckNextLeasesFromCallersReading(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stale bool
		want  time.Duration // from the AckNext call to the job's redelivery
	}{
		{"reading 10s old", true, 50 * time.Second},
		{"zero reading", false, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := open(t, driver.Config{})
				ctx := context.Background()
				mustEnqueue(t, m, driver.Message{ID: "a"})
				mustEnqueue(t, m, driver.Message{ID: "b"})
				d := receive(t, m)
				reading := time.Now()
				time.Sleep(10 * time.Second)
				now := time.Time{}
				if tc.stale {
					now = reading
				}
				call := time.Now()
				if next, err := m.AckNext(ctx, &d, now, time.Minute); !next || err != nil || d.ID != "b" {
					t.Fatalf("AckNext = %v, %v, took %q; want b", next, err, d.ID)
				}
				if err := m.Start(ctx, &d); err != nil {
					t.Fatal(err)
				}
				var g driver.Delivery
				if err := m.Receive(ctx, time.Hour, &g); err != nil || g.ID != "b" {
					t.Fatalf("Receive = %v, %q; want b back", err, g.ID)
				}
				if after := time.Since(call); after != tc.want {
					t.Fatalf("b came back %v after AckNext; want %v", after, tc.want)
				}
				res, err := m.Bury(ctx, &g, driver.ReasonPermanent, driver.Attempt{Number: 2, Error: "x"})
				if err != nil || len(res.DeadEvicted) != 0 {
					t.Fatal(err)
				}
				var dead []driver.DeadMessage
				for dm, err := range m.DeadLetters(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					dead = append(dead, dm)
				}
				wantStart := call
				if tc.stale {
					wantStart = reading
				}
				if h := dead[0].History; len(h) != 2 || !h[0].Start.Equal(wantStart) || !h[0].End.Equal(call.Add(tc.want)) || h[0].Error != driver.ErrLeaseExpired.Error() {
					t.Fatalf("history %+v; want the expired run from %v to %v first", h, wantStart, call.Add(tc.want))
				}
			})
		})
	}
}

// A receiver asleep until the end of the only lease is woken to recompute
// its wake-up time when AckNext takes a job with a lease that ends sooner,
// and gets that job when its lease ends.
func TestMemoryAckNextWakesSleepingReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := open(t, driver.Config{})
		ctx := context.Background()
		mustEnqueue(t, m, driver.Message{ID: "a", Key: "k"})
		mustEnqueue(t, m, driver.Message{ID: "b", Key: "k"}) // behind a
		d := receive(t, m)                                   // a, leased for an hour
		type result struct {
			id    string
			err   error
			after time.Duration
		}
		got := make(chan result, 1)
		start := time.Now()
		go func() {
			var g driver.Delivery
			c, cancel := context.WithTimeout(ctx, 2*time.Hour)
			defer cancel()
			err := m.Receive(c, time.Hour, &g)
			got <- result{g.ID, err, time.Since(start)}
		}()
		synctest.Wait() // the receiver sleeps until a's lease ends
		if next, err := m.AckNext(ctx, &d, time.Now(), time.Minute); !next || err != nil || d.ID != "b" {
			t.Fatalf("AckNext = %v, %v, took %q; want b", next, err, d.ID)
		}
		if r := <-got; r.id != "b" || r.err != nil || r.after != time.Minute {
			t.Errorf("receiver got %q (%v) after %v; want b after 1m", r.id, r.err, r.after)
		}
	})
}

// A Start on a lease that expired and was taken back fails with
// ErrLeaseLost and spends no attempt: its handler must not run while the
// job is with someone else. A Start on an expired lease not yet taken back
// still holds (nobody else has the job).
func TestMemoryStartAfterExpiryFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := open(t, driver.Config{})
		ctx := context.Background()
		mustEnqueue(t, m, driver.Message{ID: "a"})
		var d driver.Delivery
		if err := m.Receive(ctx, time.Minute, &d); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		d2 := d
		if err := m.Start(ctx, &d2); err != nil {
			t.Fatalf("Start on an expired lease not taken back: %v, want nil", err)
		}
		mustEnqueue(t, m, driver.Message{ID: "b"})
		var e driver.Delivery
		if err := m.Receive(ctx, time.Minute, &e); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		if s, _ := m.Stats(ctx); s.Ready != 2 || s.InFlight != 0 { // takes both leases back
			t.Fatalf("stats %+v: want both jobs back", s)
		}
		if err := m.Start(ctx, &e); !errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Start after the lease was taken back: %v, want ErrLeaseLost", err)
		}
		got := map[string]int{}
		for range 2 {
			r := receive(t, m)
			got[r.ID] = r.Attempt
		}
		if got["a"] != 2 || got["b"] != 1 {
			t.Fatalf("redelivered with attempts %v; want a 2 (started), b 1 (its Start failed)", got)
		}
	})
}
