package queuetest

import (
	"context"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/retry"
)

// The payload version a job is enqueued with comes back with every
// delivery, in its dead letter, and after a redrive.
func testVersionRoundTrip(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks, queue.WithVersion(3))
	id := e.enqueue(q, "v3")
	versions := make(chan int, 2)
	redriven := make(chan struct{})
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		versions <- j.Version
		select {
		case <-redriven:
			return nil
		default:
			return retry.Permanent(errBoom)
		}
	}, queue.WithWorkers(1))
	if v := recv(e, versions, "first delivery"); v != 3 {
		e.Errorf("delivered with version %d, want 3", v)
	}
	recv(e, ev.dead, "dead letter")
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Job.ID != id || dls[0].Job.Version != 3 || dls[0].Job.Payload != "v3" {
		e.Fatalf("dead letters %+v: want %s at version 3", dls, id)
	}
	close(redriven)
	if err := q.Redrive(context.Background(), id); err != nil {
		e.Fatalf("Redrive: %v", err)
	}
	if v := recv(e, versions, "redriven delivery"); v != 3 {
		e.Errorf("redriven job delivered with version %d, want 3", v)
	}
	recv(e, ev.acked, "ack")
}

// Release with a delay makes the job ready again only after the delay,
// with no attempt spent.
func testReleaseDelay(e *env) {
	b := e.openBackend(driver.Config{})
	defer func() { _ = b.Close(context.Background()) }()
	bg := context.Background()
	if _, err := b.Enqueue(bg, driver.Message{ID: "later", Key: "k", Version: 2, Body: []byte("x"), Value: "x", EnqueuedAt: time.Now()}); err != nil {
		e.Fatalf("Enqueue: %v", err)
	}
	if _, err := b.Enqueue(bg, driver.Message{ID: "next", Key: "k", Body: []byte("y"), Value: "y", EnqueuedAt: time.Now()}); err != nil {
		e.Fatalf("Enqueue: %v", err)
	}
	var d driver.Delivery
	if err := b.Receive(bg, 150*e.unit, &d); err != nil || d.ID != "later" || d.Version != 2 {
		e.Fatalf("Receive: %v, %q at version %d; want later at version 2", err, d.ID, d.Version)
	}
	if err := b.Start(bg, &d); err != nil {
		e.Fatalf("Start: %v", err)
	}
	start := time.Now()
	if err := b.Release(bg, &d, 3*e.unit); err != nil {
		e.Fatalf("Release: %v", err)
	}
	got := make(chan driver.Delivery, 1)
	go func() {
		var d driver.Delivery
		if err := b.Receive(bg, 150*e.unit, &d); err == nil {
			got <- d
		}
	}()
	// The released job holds its key while delayed: "next" waits behind it.
	d = recv(e, got, "the released job")
	e.elapsed("released job delivered", time.Since(start), 3*e.unit)
	if d.ID != "later" || d.Attempt != 1 || d.Version != 2 {
		e.Errorf("delivered %q, attempt %d, version %d; want later, attempt 1 (none spent), version 2", d.ID, d.Attempt, d.Version)
	}
}
