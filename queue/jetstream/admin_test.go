package jetstream_test

import (
	"context"
	"errors"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
	"github.com/corral-go/corral/queue/queuetest"
)

// TestAdminAcrossProcesses: queuetest's check that a cancel and a pause reach the consumer of
// another process, on two Backends (each on its own connection) of one queue. The cancel
// reaches the handler at the consumer's next renewal (half the 2s lease) plus a request.
func TestAdminAcrossProcesses(t *testing.T) {
	srv := natstest.Start(t)
	name := natstest.Prefix(t)
	t.Cleanup(func() {
		admin, err := natsjs.New(srv.Connect(t))
		if err != nil {
			t.Fatal(err)
		}
		deleteStreams(t, admin, name)
	})
	queuetest.RunAdminAcrossProcesses(t, func(t *testing.T) driver.Backend {
		js, err := natsjs.New(srv.Connect(t))
		if err != nil {
			t.Fatal(err)
		}
		return jetstream.New(js, name)
	}, 2*time.Second, time.Second+time.Second/2, jetstream.PauseWithin, time.Second)
}

// TestCancelOrphaned: a job cancelled while in flight in a process that then died (its delivery
// is never settled) is never handled again: the Receive the broker redelivers it to buries it
// with ReasonCanceled. Before that, the live lease's Extend says ErrCanceled and a Release
// buries it (the path of a consumer that is still alive).
func TestCancelOrphaned(t *testing.T) {
	ctx := context.Background()
	b := newBackendFunc(t)(t).(*jetstream.Backend)
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	const lease = time.Second
	for _, id := range []string{"dies", "lives"} {
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte(id), EnqueuedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	var dies, lives driver.Delivery
	for _, d := range []*driver.Delivery{&dies, &lives} {
		if err := b.Receive(ctx, lease, d); err != nil {
			t.Fatal(err)
		}
		if err := b.Start(ctx, d); err != nil {
			t.Fatal(err)
		}
		if err := b.Cancel(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		if info, err := b.Get(ctx, d.ID); err != nil || info.State != driver.StateInFlight || !info.Canceling {
			t.Fatalf("Get(%s) after Cancel = %+v, %v: want in flight, canceling", d.ID, info, err)
		}
	}
	if err := b.Extend(ctx, &lives, lease); !errors.Is(err, driver.ErrCanceled) {
		t.Fatalf("Extend of a cancelled job: %v, want ErrCanceled", err)
	}
	if err := b.Release(ctx, &lives, 0); err != nil {
		t.Fatalf("Release of a cancelled job: %v", err)
	}
	// dies's lease ends unsettled; the Receive it is redelivered to buries it.
	rctx, cancel := context.WithTimeout(ctx, 3*lease)
	defer cancel()
	var d driver.Delivery
	if err := b.Receive(rctx, lease, &d); !errors.Is(err, context.DeadlineExceeded) {
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
