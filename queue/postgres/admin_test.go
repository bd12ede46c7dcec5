package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
	"github.com/corral-go/corral/queue/queuetest"
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

// TestCancelAcrossProcesses: queuetest's check that a cancel and a pause reach the consumer of
// another process, on two Backends of one queue.
func TestCancelAcrossProcesses(t *testing.T) {
	pool := db(t)
	name := queueName(t)
	queuetest.RunAdminAcrossProcesses(t, func(t *testing.T) driver.Backend {
		return postgres.New(pool, name, postgres.WithPollInterval(100*time.Millisecond))
	}, 2*time.Second, time.Second+time.Second/2, 0, time.Second)
}
