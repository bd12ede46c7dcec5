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

// TestCancelOrphaned: a job cancelled while in flight in a process that then died (its delivery
// is never settled) is never delivered again: the Receive that takes its lease back buries it
// with ReasonCanceled. Before that, the live lease's Extend says ErrCanceled and a Nack buries
// it (the path of a consumer that is still alive).
func TestCancelOrphaned(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	b := postgres.New(pool, queueName(t), postgres.WithPollInterval(100*time.Millisecond))
	t.Cleanup(func() { _ = b.Close(ctx) })
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"dies", "lives"} {
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	var dies, lives driver.Delivery
	for _, d := range []*driver.Delivery{&dies, &lives} {
		if err := b.Receive(ctx, time.Second, d); err != nil {
			t.Fatal(err)
		}
		if err := b.Start(ctx, d); err != nil {
			t.Fatal(err)
		}
		if err := b.Cancel(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Extend(ctx, &lives, time.Second); !errors.Is(err, driver.ErrCanceled) {
		t.Fatalf("Extend of a cancelled job: %v, want ErrCanceled", err)
	}
	if err := b.Nack(ctx, &lives, 0, driver.Attempt{Number: 1, Error: "stopped"}); err != nil {
		t.Fatalf("Nack of a cancelled job: %v", err)
	}
	// dies's lease ends unsettled; a Receive waiting meanwhile takes it back and buries it.
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var d driver.Delivery
	if err := b.Receive(rctx, time.Second, &d); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive after the lease ended: %v (job %q), want nothing delivered", err, d.ID)
	}
	for _, id := range []string{"dies", "lives"} {
		info, err := b.Get(ctx, id)
		if err != nil || info.State != driver.StateDead || info.Reason != driver.ReasonCanceled || info.Attempt != 1 {
			t.Errorf("Get(%s) = %+v, %v: want dead, canceled, 1 run", id, info, err)
		}
	}
	if s, err := b.Stats(ctx); err != nil || s.Dead != 2 || s.Ready+s.InFlight+s.Delayed != 0 {
		t.Errorf("stats %+v, %v: want 2 dead, nothing stored", s, err)
	}
}

// TestCancelAcrossProcesses: a job running in one process (a Backend and queue of its own) is
// cancelled from another, and its handler's context is cancelled with ErrCanceled within the
// consumer's renewal period (half its lease); a pause from the other process stops it taking
// jobs.
func TestCancelAcrossProcesses(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	name := queueName(t)
	open := func() *queue.Queue[string] {
		q, err := queue.New[string](ctx, queue.WithBackend(postgres.New(pool, name, postgres.WithPollInterval(100*time.Millisecond))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close(ctx) })
		return q
	}
	worker, operator := open(), open()
	started := make(chan string, 4)
	cause := make(chan error, 1)
	if _, err := worker.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		started <- j.ID
		if j.ID == "long" {
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return context.Cause(ctx)
		}
		return nil
	}, queue.WithWorkers(1), queue.WithLease(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.Enqueue(ctx, "x", queue.WithID("long")); err != nil {
		t.Fatal(err)
	}
	recvWithin(t, started, 10*time.Second, "the handler's start")
	t0 := time.Now()
	if err := operator.Cancel(ctx, "long"); err != nil {
		t.Fatal(err)
	}
	if err := recvWithin(t, cause, 10*time.Second, "the handler's cancellation"); !errors.Is(err, queue.ErrCanceled) {
		t.Errorf("handler's cause %v, want ErrCanceled", err)
	}
	if d := time.Since(t0); d > time.Second+time.Second/2 { // the renewal period (1s) and a call
		t.Errorf("cancelled %v after Cancel in the other process, want within 1.5s", d)
	}
	if err := operator.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.Enqueue(ctx, "x", queue.WithID("held")); err != nil {
		t.Fatal(err)
	}
	quiet(t, started, time.Second, "a job started while paused")
	if s, err := worker.Stats(ctx); err != nil || !s.Paused || s.Ready != 1 {
		t.Errorf("the worker's stats %+v, %v: want paused, 1 ready", s, err)
	}
	if err := operator.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if id := recvWithin(t, started, 10*time.Second, "the start after resume"); id != "held" {
		t.Errorf("started %s after resume, want held", id)
	}
}
