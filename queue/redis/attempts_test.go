package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// TestLeaseExpiredRunsInHistory pins the attempts contract for runs that died with their
// process: a job whose handler started and never settled, three times (the lease expired
// each time), and once delivered without a start, is delivered a fifth time with Attempt 4;
// buried with a zero Attempt (nothing ran), its dead letter has Attempt 3 and exactly three
// history entries, Number 1, 2, 3, each "queue: lease expired", started at its Start and
// ended when Receive took the job back.
func TestLeaseExpiredRunsInHistory(t *testing.T) {
	ctx := context.Background()
	b := openBackend(t, driver.Config{})
	const lease = 200 * time.Millisecond
	if _, err := b.Enqueue(ctx, driver.Message{ID: "poison", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	receive := func() (driver.Delivery, time.Time) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var d driver.Delivery
		if err := b.Receive(rctx, lease, &d); err != nil {
			t.Fatal(err)
		}
		return d, time.Now()
	}
	var starts, takenBack []time.Time // starts: the times before and after each Start call
	for i, start := range []bool{true, false, true, true} {
		d, at := receive()
		if i > 0 {
			takenBack = append(takenBack, at)
		}
		if start {
			before := time.Now()
			if err := b.Start(ctx, &d); err != nil {
				t.Fatal(err)
			}
			starts = append(starts, before, time.Now())
		}
	}
	d, at := receive()
	takenBack = append(takenBack, at)
	if d.Attempt != 4 {
		t.Fatalf("fifth delivery: Attempt %d, want 4 (three runs)", d.Attempt)
	}
	if _, err := b.Bury(ctx, &d, queue.ReasonAttempts, queue.Attempt{}); err != nil {
		t.Fatal(err)
	}
	var dead []driver.DeadMessage
	for dm, err := range b.DeadLetters(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		dead = append(dead, dm)
	}
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	dm := dead[0]
	if dm.Attempt != 3 || len(dm.History) != 3 {
		t.Fatalf("dead letter: Attempt %d, %d history entries %+v; want 3 and 3", dm.Attempt, len(dm.History), dm.History)
	}
	// The runs were taken back by the second, fourth and fifth deliveries.
	ends := []time.Time{takenBack[0], takenBack[2], takenBack[3]}
	for i, a := range dm.History {
		if a.Number != i+1 || a.Error != queue.ErrLeaseExpired.Error() {
			t.Errorf("entry %d: Number %d, Error %q; want %d, %q", i, a.Number, a.Error, i+1, queue.ErrLeaseExpired)
		}
		from, to := starts[2*i], starts[2*i+1]
		if a.Start.Before(from) || a.Start.After(to) || !a.End.After(a.Start) || a.End.After(ends[i]) {
			t.Errorf("entry %d: %v to %v; want a start within Start's call (%v to %v), an end after it and before %v",
				i, a.Start, a.End, from, to, ends[i])
		}
	}
}

// TestEvictedEntryHasNoRun pins the attempts contract for an eviction: a job evicted by
// DropOldest after one failed run is dead-lettered with Attempt 1 and two history entries,
// the run's (Number 1) and the eviction's (Number 0, saying why).
func TestEvictedEntryHasNoRun(t *testing.T) {
	srv := redistest.Start(t, "always")
	ctx := context.Background()
	b := redis.New(newClient(t, srv.Addr()), queueName(t), redis.WithPollInterval(10*time.Millisecond))
	if err := b.Open(ctx, driver.Config{Capacity: 1, Overflow: queue.DropOldest}); err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if _, err := b.Enqueue(ctx, driver.Message{ID: "old", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var d driver.Delivery
	if err := b.Receive(ctx, time.Minute, &d); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx, &d); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := b.Nack(ctx, &d, time.Hour, queue.Attempt{Number: 1, Start: now, End: now, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	res, err := b.Enqueue(ctx, driver.Message{ID: "new", Body: []byte("x")})
	if err != nil || len(res.Evicted) != 1 || res.Evicted[0] != "old" {
		t.Fatalf("Enqueue at capacity: %+v, %v; want old evicted", res, err)
	}
	for dm, err := range b.DeadLetters(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		h := dm.History
		if dm.ID != "old" || dm.Attempt != 1 || len(h) != 2 || h[0].Number != 1 || h[1].Number != 0 ||
			h[1].Error != "queue: evicted by overflow (drop oldest)" || h[1].Start.IsZero() {
			t.Errorf("evicted: %s attempt %d history %+v; want old, attempt 1, entries of Number 1 and 0 (evicted)", dm.ID, dm.Attempt, h)
		}
	}
}

// TestReceiveStartCountsTheRun pins ReceiveStart's attempts: its delivery is started as it is
// received (a lease that expires on it spends the attempt, with a history entry), a Release
// or a Bury with no run (Number 0) gives the attempt back, and a Nack keeps it.
func TestReceiveStartCountsTheRun(t *testing.T) {
	ctx := context.Background()
	b := openBackend(t, driver.Config{})
	const lease = 200 * time.Millisecond
	enqueue := func(id string) {
		t.Helper()
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue("a")
	receive := func(start bool, id string, attempt int) driver.Delivery {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var d driver.Delivery
		recv := b.Receive
		if start {
			recv = b.ReceiveStart
		}
		if err := recv(rctx, lease, &d); err != nil {
			t.Fatal(err)
		}
		if d.ID != id || d.Attempt != attempt {
			t.Fatalf("received %s, Attempt %d; want %s, %d", d.ID, d.Attempt, id, attempt)
		}
		return d
	}
	receive(true, "a", 1)                         // its process dies: the lease expires on a started run
	d := receive(false, "a", 2)                   // taken back, the run counted
	if err := b.Release(ctx, &d, 0); err != nil { // not started: nothing to give back
		t.Fatal(err)
	}
	d = receive(true, "a", 2)
	if err := b.Release(ctx, &d, 0); err != nil { // started on receive: given back
		t.Fatal(err)
	}
	d = receive(true, "a", 2)
	if _, err := b.Bury(ctx, &d, queue.ReasonDecode, queue.Attempt{}); err != nil { // no run
		t.Fatal(err)
	}
	enqueue("b")
	d = receive(true, "b", 1)
	now := time.Now()
	if err := b.Nack(ctx, &d, 0, queue.Attempt{Number: 1, Start: now, End: now, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	d = receive(true, "b", 2)
	if err := b.Ack(ctx, &d); err != nil {
		t.Fatal(err)
	}
	var dead []driver.DeadMessage
	for dm, err := range b.DeadLetters(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		dead = append(dead, dm)
	}
	if len(dead) != 1 || dead[0].ID != "a" || dead[0].Attempt != 1 || len(dead[0].History) != 1 ||
		dead[0].History[0].Number != 1 || dead[0].History[0].Error != queue.ErrLeaseExpired.Error() {
		t.Fatalf("dead letters %+v; want a with Attempt 1 and one entry, Number 1, lease expired", dead)
	}
}
