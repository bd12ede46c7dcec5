package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

// The poll interval of the tests of expired leases: the bound, past a lease's end, within
// which the backend promises to take the lease back (see the package doc).
const expiryPoll = time.Second

// A job whose worker died (a delivery started and never settled) is delivered again within the
// poll interval of its lease's end, while the queue stays busy with 50 other jobs kept ready:
// the claim queries that deliver those take the expired lease back. With a Share as without.
func TestExpiredLeaseUnderLoad(t *testing.T) {
	for _, share := range []bool{false, true} {
		t.Run(fmt.Sprintf("share=%v", share), func(t *testing.T) { expiredLeaseUnderLoad(t, share) })
	}
}

func expiredLeaseUnderLoad(t *testing.T, share bool) {
	const (
		lease   = time.Second // the dead worker's lease at the backend
		backlog = 50
	)
	pool := db(t)
	ctx := context.Background()
	name := queueName(t)

	// The dead worker: a backend of its own that leases the job, starts it, and is never
	// heard from again.
	dead := postgres.New(pool, name, postgres.WithPollInterval(expiryPoll))
	if err := dead.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dead.Close(ctx) })
	if _, err := dead.Enqueue(ctx, driver.Message{ID: "dead", Body: []byte(`"dead"`)}); err != nil {
		t.Fatal(err)
	}
	leased := time.Now()
	var d driver.Delivery
	if err := dead.Receive(ctx, lease, &d); err != nil || d.ID != "dead" {
		t.Fatalf("the dead worker's Receive: %v, %q", err, d.ID)
	}
	if err := dead.Start(ctx, &d); err != nil {
		t.Fatal(err)
	}

	q, err := queue.New[string](ctx, queue.WithBackend(postgres.New(pool, name, postgres.WithPollInterval(expiryPoll))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(ctx) })
	for i := range backlog {
		if _, err := q.Enqueue(ctx, "load", queue.WithID(fmt.Sprint("load-", i))); err != nil {
			t.Fatal(err)
		}
	}
	type seen struct {
		at      time.Time
		attempt int
	}
	back := make(chan seen, 1)
	var next atomic.Int64
	next.Store(backlog)
	h := func(ctx context.Context, j queue.Job[string]) error {
		if j.ID == "dead" {
			back <- seen{time.Now(), j.Attempt}
			return nil
		}
		// Every job handled is replaced by another: the backlog stays.
		_, err := q.Enqueue(ctx, "load", queue.WithID(fmt.Sprint("load-", next.Add(1))))
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Enqueue: %v", err)
		}
		return nil
	}
	opts := []queue.ConsumerOption{queue.WithWorkers(4)}
	if share {
		opts = append(opts, queue.WithShare(queue.NewShare(4, queue.Weighted), "load", 1))
	}
	c, err := q.Consume(ctx, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = c.Close(ctx) }()

	deadline := leased.Add(lease + expiryPoll)
	s := recvWithin(t, back, time.Until(deadline)+10*time.Second, "the dead worker's job")
	if s.at.After(deadline) {
		t.Errorf("the dead worker's job came back %v after its lease began, want within lease %v + poll interval %v",
			s.at.Sub(leased), lease, expiryPoll)
	}
	if s.attempt != 2 {
		t.Errorf("the dead worker's job came back at attempt %d, want 2", s.attempt)
	}
	if n := next.Load() - backlog; n < backlog {
		t.Logf("only %d jobs handled besides", n)
	}
}
