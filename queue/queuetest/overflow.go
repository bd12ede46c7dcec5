package queuetest

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

func testOverflowReject(e *env) {
	e.skipUnless(queue.Reject)
	q := e.newQueue(queue.WithCapacity(2), queue.WithOverflow(queue.Reject))
	e.enqueue(q, "1")
	e.enqueue(q, "2")
	if _, err := q.Enqueue(context.Background(), "3"); !errors.Is(err, queue.ErrFull) {
		e.Fatalf("Enqueue at capacity: %v, want ErrFull", err)
	}
	if s := stats(e, q); s.Rejected != 1 || s.Enqueued != 2 || s.Ready != 2 {
		e.Errorf("stats %+v: want 1 rejected, 2 ready", s)
	}
}

func testOverflowDropNewest(e *env) {
	e.skipUnless(queue.DropNewest)
	var dropped []string
	q := e.newQueue(queue.WithCapacity(2), queue.WithOverflow(queue.DropNewest),
		queue.WithHooks(queue.Hooks{OnDrop: func(_ context.Context, x queue.Event) { dropped = append(dropped, x.ID) }}))
	e.enqueue(q, "1")
	e.enqueue(q, "2")
	if _, err := q.Enqueue(context.Background(), "3", queue.WithID("third")); !errors.Is(err, queue.ErrDropped) {
		e.Fatalf("Enqueue at capacity: %v, want ErrDropped", err)
	}
	if len(dropped) != 1 || dropped[0] != "third" {
		e.Errorf("OnDrop saw %v, want [third]", dropped)
	}
	got := make(chan string, 3)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { got <- j.Payload; return nil }, queue.WithWorkers(1))
	if a, b := recv(e, got, "job"), recv(e, got, "job"); a != "1" || b != "2" {
		e.Errorf("handled %q, %q; want 1, 2", a, b)
	}
	quiet(e, got, 5*e.unit, "dropped job")
	if s := stats(e, q); s.Dropped != 1 || s.Dead != 0 {
		e.Errorf("stats %+v: want 1 dropped, none dead", s)
	}
}

func testOverflowDropOldest(e *env) {
	e.skipUnless(queue.DropOldest)
	ev, hooks := newEvents()
	q := e.newQueue(hooks, queue.WithCapacity(2), queue.WithOverflow(queue.DropOldest))
	first := e.enqueue(q, "1")
	e.enqueue(q, "2")
	e.enqueue(q, "3")
	d := recv(e, ev.dead, "eviction")
	if d.ID != first || d.Reason != queue.ReasonEvicted {
		e.Errorf("dead event %+v: want %s with reason evicted", d, first)
	}
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Job.ID != first || dls[0].Job.Payload != "1" || dls[0].Reason != queue.ReasonEvicted {
		e.Fatalf("dead letters %+v: want job 1 with reason evicted", dls)
	}
	// Evicted without a run: no attempt used, one history entry that says why, with Number 0.
	if dl := dls[0]; dl.Job.Attempt != 0 || len(dl.History) != 1 || dl.History[0].Number != 0 || dl.History[0].Error == "" {
		e.Errorf("evicted dead letter %+v: want attempt 0 and one history entry numbered 0 with its error", dl)
	}
	got := make(chan string, 3)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { got <- j.Payload; return nil }, queue.WithWorkers(1))
	if a, b := recv(e, got, "job"), recv(e, got, "job"); a != "2" || b != "3" {
		e.Errorf("handled %q, %q; want 2, 3", a, b)
	}
	if s := stats(e, q); s.Enqueued != 3 || s.DeadLettered[queue.ReasonEvicted] != 1 {
		e.Errorf("stats %+v: want 3 enqueued, 1 dead by eviction", s)
	}
}

func testOverflowBlock(e *env) {
	e.skipUnless(queue.Block)
	ev, hooks := newEvents()
	q := e.newQueue(hooks, queue.WithCapacity(1), queue.WithOverflow(queue.Block))
	e.enqueue(q, "1")
	// A blocked Enqueue ends with its ctx.
	start := time.Now() // before the deadline is set, so elapsed is a lower bound
	ctx, cancel := context.WithTimeout(context.Background(), 3*e.unit)
	if _, err := q.Enqueue(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
		e.Fatalf("blocked Enqueue: %v, want deadline exceeded", err)
	}
	cancel()
	e.elapsed("blocked Enqueue gave up", time.Since(start), 3*e.unit)
	// A blocked Enqueue proceeds when a job leaves.
	done := make(chan error, 1)
	go func() {
		_, err := q.Enqueue(context.Background(), "2")
		done <- err
	}()
	quiet(e, done, 3*e.unit, "Enqueue returned while full")
	got := make(chan string, 3)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { got <- j.Payload; return nil }, queue.WithWorkers(1))
	if err := recv(e, done, "blocked Enqueue"); err != nil {
		e.Fatalf("blocked Enqueue: %v", err)
	}
	if a, b := recv(e, got, "job"), recv(e, got, "job"); a != "1" || b != "2" {
		e.Errorf("handled %q, %q; want 1, 2", a, b)
	}
	recv(e, ev.acked, "ack")
	recv(e, ev.acked, "ack")
}

// testDropOldestSparesLeased: DropOldest evicts the oldest job that is not
// leased; the leased one stays, and its delivery can still be acked.
func testDropOldestSparesLeased(e *env) {
	e.skipUnless(queue.DropOldest)
	b := e.openBackend(driver.Config{Capacity: 2, Overflow: queue.DropOldest})
	bg := context.Background()
	for _, id := range []string{"A", "B"} {
		if _, err := b.Enqueue(bg, driver.Message{ID: id, Body: []byte(id), Value: id}); err != nil {
			e.Fatalf("Enqueue(%s): %v", id, err)
		}
	}
	var d driver.Delivery
	if err := b.Receive(bg, 100*e.unit, &d); err != nil || d.ID != "A" {
		e.Fatalf("Receive: %v, %q; want A", err, d.ID)
	}
	res, err := b.Enqueue(bg, driver.Message{ID: "C", Body: []byte("C"), Value: "C"})
	if err != nil || !slices.Equal(res.Evicted, []string{"B"}) {
		e.Fatalf("Enqueue(C) at capacity: %+v, %v; want B evicted", res, err)
	}
	if err := b.Ack(bg, &d); err != nil {
		e.Errorf("Ack of the leased job after an eviction: %v", err)
	}
	var dead []string
	for dm, err := range b.DeadLetters(bg) {
		if err != nil {
			e.Fatalf("DeadLetters: %v", err)
		}
		dead = append(dead, dm.ID+":"+string(dm.Reason))
	}
	if !slices.Equal(dead, []string{"B:evicted"}) {
		e.Errorf("dead letters %v, want [B:evicted]", dead)
	}
}
