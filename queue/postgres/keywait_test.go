package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

// A keyed Enqueue behind an open transaction that holds the same key (a keyed EnqueueTx) is a
// wait, not an outage: past the call timeout it still waits, ends with its ctx's cause (not the
// call timeout's queue.ErrUnavailable) and stores nothing, and the queue's Health stays
// reachable; an Enqueue waiting as the transaction commits stores its job after the
// transaction's.
func TestKeyedEnqueueWaitsForTransaction(t *testing.T) {
	for _, capacity := range []int{0, 10} {
		t.Run(map[int]string{0: "unbounded", 10: "capacity"}[capacity], func(t *testing.T) {
			keyedEnqueueWaits(t, capacity)
		})
	}
}

func keyedEnqueueWaits(t *testing.T, capacity int) {
	const callTimeout = 300 * time.Millisecond
	pool := db(t)
	ctx := context.Background()
	b := postgres.New(pool, queueName(t), postgres.WithCallTimeout(callTimeout))
	q, err := queue.New[string](ctx, queue.WithBackend(b), queue.WithCapacity(capacity))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(ctx) })
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := postgres.EnqueueTx(ctx, tx, b, q, "first", queue.WithID("first"), queue.WithKey("k")); err != nil {
		t.Fatal(err)
	}

	// Past the call timeout, the plain Enqueue still waits; its ctx ends it.
	stop := errors.New("the caller gave up")
	wctx, cancel := context.WithTimeoutCause(ctx, 4*callTimeout, stop)
	_, err = q.Enqueue(wctx, "late", queue.WithID("late"), queue.WithKey("k"))
	cancel()
	// (Its ctx may end while a try is in flight: the error then also matches ErrUnavailable,
	// the try's outcome unknown; the call timeout's ErrUnavailable would not hold the cause.)
	if !errors.Is(err, stop) {
		t.Fatalf("keyed Enqueue behind an open transaction: %v, want its ctx's cause", err)
	}
	if h := q.Health(); !h.Reachable {
		t.Fatalf("Health after a wait on a key: %+v, want reachable", h)
	}

	// One that waits as the transaction commits stores its job after the transaction's.
	done := make(chan error, 1)
	go func() {
		_, err := q.Enqueue(ctx, "second", queue.WithID("second"), queue.WithKey("k"))
		done <- err
	}()
	quiet(t, done, 2*callTimeout, "an Enqueue that did not wait for the transaction")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recvWithin(t, done, 10*time.Second, "the waiting Enqueue"); err != nil {
		t.Fatalf("keyed Enqueue once the transaction committed: %v", err)
	}
	if h := q.Health(); !h.Reachable {
		t.Errorf("Health: %+v, want reachable", h)
	}
	var got []string
	for range 2 {
		var d driver.Delivery
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := b.Receive(rctx, time.Minute, &d)
		cancel()
		if err != nil {
			t.Fatalf("Receive: %v (got %v)", err, got)
		}
		got = append(got, d.ID)
		if err := b.Ack(ctx, &d); err != nil {
			t.Fatal(err)
		}
	}
	if got[0] != "first" || got[1] != "second" {
		t.Errorf("delivered %v, want [first second]", got)
	}
	if s, err := q.Stats(ctx); err != nil || s.Ready+s.Delayed+s.InFlight != 0 {
		t.Errorf("Stats %+v, %v: want nothing left (the late job never stored)", s, err)
	}
}

// Redrive of a dead letter whose key an open transaction holds waits for it the same way: its
// ctx's cause past the call timeout, the dead letter kept; after the commit, it redrives.
func TestRedriveWaitsForTransaction(t *testing.T) {
	const callTimeout = 300 * time.Millisecond
	pool := db(t)
	ctx := context.Background()
	b := postgres.New(pool, queueName(t), postgres.WithCallTimeout(callTimeout))
	q, err := queue.New[string](ctx, queue.WithBackend(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(ctx) })
	if _, err := q.Enqueue(ctx, "dead", queue.WithID("dead"), queue.WithKey("k")); err != nil {
		t.Fatal(err)
	}
	var d driver.Delivery
	if err := b.Receive(ctx, time.Minute, &d); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Bury(ctx, &d, queue.ReasonPermanent, queue.Attempt{}); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := postgres.EnqueueTx(ctx, tx, b, q, "first", queue.WithID("first"), queue.WithKey("k")); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("the caller gave up")
	wctx, cancel := context.WithTimeoutCause(ctx, 4*callTimeout, stop)
	err = b.Redrive(wctx, "dead")
	cancel()
	if !errors.Is(err, stop) {
		t.Fatalf("Redrive behind an open transaction: %v, want its ctx's cause", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Redrive(ctx, "dead"); err != nil {
		t.Fatalf("Redrive once the transaction committed: %v", err)
	}
}
