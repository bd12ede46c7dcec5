package redis_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// TestReceiveAfterKeysLost: a server that lost the queue's keys while its Backends were open
// (a replica promoted before it had them, a restart without persistence) makes Stats, and
// Receive, record them again as Open and CheckLease did (the consumer group, the shared
// settings, the lease), each counted in Losses; Receive delivers the jobs enqueued since, and
// what the server lost stays lost.
func TestReceiveAfterKeysLost(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := newClient(t, srv.Addr())
	name := queueName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := redis.New(c, name, redis.WithPollInterval(10*time.Millisecond))
	if err := b.Open(ctx, driver.Config{Capacity: 10}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	if err := b.CheckLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	lose := func(id string) { // enqueue id, then lose every key
		t.Helper()
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.Losses(); n != 0 {
		t.Fatalf("Losses before any loss = %d, want 0", n)
	}
	lose("lost")
	if st, err := b.Stats(ctx); err != nil || st != (driver.Stats{}) {
		t.Fatalf("Stats after the keys were lost: %+v, %v; want zero stats", st, err)
	}
	if n := b.Losses(); n != 1 {
		t.Errorf("Losses after Stats met a loss = %d, want 1", n)
	}
	lose("lost too")
	if _, err := b.Enqueue(ctx, driver.Message{ID: "after", Body: []byte("y")}); err != nil {
		t.Fatalf("Enqueue after the keys were lost: %v", err)
	}
	var d driver.Delivery
	if err := b.Receive(ctx, time.Minute, &d); err != nil || d.ID != "after" {
		t.Fatalf("Receive after the keys were lost: %q, %v; want the job enqueued since", d.ID, err)
	}
	if n := b.Losses(); n != 2 {
		t.Errorf("Losses after Receive met a second loss = %d, want 2", n)
	}
	if err := b.Ack(ctx, &d); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer rcancel()
	if err := b.Receive(rctx, time.Minute, &d); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive with nothing left: %q, %v; want the context's deadline", d.ID, err)
	}
	if n := b.Losses(); n != 2 {
		t.Errorf("Losses after receives on the keys recorded again = %d, want 2", n)
	}
	// The settings and the lease are the queue's again.
	var se *driver.SettingsError
	if err := redis.New(c, name).Open(ctx, driver.Config{Capacity: 20}); !errors.As(err, &se) || se.Setting != "capacity" {
		t.Errorf("Open with another capacity after the keys were recorded again: %v; want a SettingsError on capacity", err)
	}
	other := redis.New(c, name)
	if err := other.Open(ctx, driver.Config{Capacity: 10}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	if err := other.CheckLease(ctx, 2*time.Minute); !errors.As(err, &se) || se.Setting != "lease" {
		t.Errorf("CheckLease with another lease after the keys were recorded again: %v; want a SettingsError on lease", err)
	}
}

// A queue's Health reports the losses its Backend found: none on a new queue, one after a
// Stats that found the server without the queue's keys, in Health and in Stats, and that
// Stats called the OnHealth hook with it.
func TestQueueHealthReportsLosses(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := newClient(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var seen atomic.Int64 // OnHealth calls, each with one loss
	onHealth := func(_ context.Context, h queue.Health) {
		if h.Losses == 1 && h.Reachable {
			seen.Add(1)
		} else {
			t.Errorf("OnHealth with %+v; want reachable with one loss", h)
		}
	}
	q, err := queue.New[string](ctx, queue.WithBackend(redis.New(c, queueName(t))), queue.WithHooks(queue.Hooks{OnHealth: onHealth}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := q.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	if _, err := q.Enqueue(ctx, "lost"); err != nil {
		t.Fatal(err)
	}
	if h := q.Health(); h.Losses != 0 {
		t.Fatalf("Health of a new queue: %+v; want no loss", h)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s, err := q.Stats(ctx)
	if err != nil || s.Ready != 0 || s.Health.Losses != 1 {
		t.Errorf("Stats after the keys were lost: %d ready, health %+v, %v; want no job and one loss", s.Ready, s.Health, err)
	}
	if h := q.Health(); h.Losses != 1 || !h.Reachable {
		t.Errorf("Health after the loss: %+v; want reachable, one loss", h)
	}
	if n := seen.Load(); n != 1 {
		t.Errorf("OnHealth called %d times; want once, by the Stats that found the loss", n)
	}
}

// A consumer whose receive (ReceiveStart, on Redis) finds the queue's keys lost calls OnHealth
// with the loss, once for the one loss its one worker found, and goes on: it handles the job
// enqueued after the loss.
func TestConsumerReportsLoss(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := newClient(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reported := make(chan queue.Health, 4)
	q, err := queue.New[string](ctx, queue.WithBackend(redis.New(c, queueName(t), redis.WithPollInterval(10*time.Millisecond))),
		queue.WithHooks(queue.Hooks{OnHealth: func(_ context.Context, h queue.Health) { reported <- h }}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := q.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	handled := make(chan string, 4)
	cons, err := q.Consume(ctx, func(_ context.Context, j queue.Job[string]) error {
		handled <- j.Payload
		return nil
	}, queue.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	if p := recvOr(t, ctx, handled); p != "before" {
		t.Fatalf("handled %q, want before", p)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	if p := recvOr(t, ctx, handled); p != "after" {
		t.Fatalf("handled %q, want after", p)
	}
	if h := recvOr(t, ctx, reported); h.Losses != 1 || !h.Reachable {
		t.Errorf("OnHealth with %+v; want reachable, one loss", h)
	}
	if _, err := cons.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(reported); n != 0 || q.Health().Losses != 1 {
		t.Errorf("%d more OnHealth calls, %d losses; want none more, one loss", n, q.Health().Losses)
	}
}

// recvOr returns what ch gives, or fails the test when ctx ends first.
func recvOr[T any](t *testing.T, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("nothing received: %v", context.Cause(ctx))
		panic("unreachable")
	}
}

// TestSettleAfterKeysLost: a delivery taken before the server lost the queue's keys is gone
// with them: settling or extending it, or starting its run, returns queue.ErrLeaseLost and
// writes nothing back (no job, no dead letter); the admin calls find no job and no dead letter.
func TestSettleAfterKeysLost(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := newClient(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := redis.New(c, queueName(t), redis.WithPollInterval(10*time.Millisecond))
	if err := b.Open(ctx, driver.Config{Capacity: 10}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	failed := driver.Attempt{Number: 1, Error: "boom"}
	calls := []struct {
		name string
		call func(d *driver.Delivery) error
	}{
		{"Start", func(d *driver.Delivery) error { return b.Start(ctx, d) }},
		{"Extend", func(d *driver.Delivery) error { return b.Extend(ctx, d, time.Minute) }},
		{"Ack", func(d *driver.Delivery) error { return b.Ack(ctx, d) }},
		{"Nack", func(d *driver.Delivery) error { return b.Nack(ctx, d, 0, failed) }},
		{"Release", func(d *driver.Delivery) error { return b.Release(ctx, d, 0) }},
		{"Bury", func(d *driver.Delivery) error {
			_, err := b.Bury(ctx, d, driver.ReasonAttempts, failed)
			return err
		}},
	}
	for _, tc := range calls {
		if _, err := b.Enqueue(ctx, driver.Message{ID: tc.name, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		var d driver.Delivery
		if err := b.Receive(ctx, time.Minute, &d); err != nil || d.ID != tc.name {
			t.Fatalf("Receive: %q, %v; want %s", d.ID, err, tc.name)
		}
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := tc.call(&d); !errors.Is(err, driver.ErrLeaseLost) {
			t.Errorf("%s of a delivery whose keys were lost: %v; want ErrLeaseLost", tc.name, err)
		}
		if st, err := b.Stats(ctx); err != nil || st != (driver.Stats{}) {
			t.Errorf("Stats after %s: %+v, %v; want zero stats: nothing written back", tc.name, st, err)
		}
		if n, err := b.Count(ctx, driver.Filter{}); err != nil || n != 0 {
			t.Errorf("Count after %s: %d, %v; want 0", tc.name, n, err)
		}
		if _, err := b.Get(ctx, tc.name); !errors.Is(err, driver.ErrNoJob) {
			t.Errorf("Get(%s) after the loss: %v; want ErrNoJob", tc.name, err)
		}
		if err := b.Cancel(ctx, tc.name); !errors.Is(err, driver.ErrNoJob) {
			t.Errorf("Cancel(%s) after the loss: %v; want ErrNoJob", tc.name, err)
		}
		if err := b.Redrive(ctx, tc.name); !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("Redrive(%s) after the loss: %v; want ErrNotFound", tc.name, err)
		}
	}
}
