package queuetest

import (
	"context"
	"errors"
	"time"

	"github.com/corral-go/corral/queue"
)

func testDedupWhileStored(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	e.enqueue(q, "first", queue.WithID("x"))
	if id, err := q.Enqueue(context.Background(), "second", queue.WithID("x")); !errors.Is(err, queue.ErrDuplicate) || id != "x" {
		e.Fatalf("Enqueue of a stored ID = %q, %v; want x, ErrDuplicate", id, err)
	}
	got := make(chan string, 10)
	c := e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		got <- j.Payload
		return nil
	})
	if p := recv(e, got, "job"); p != "first" {
		e.Errorf("handled %q, want first", p)
	}
	recv(e, ev.acked, "ack")
	if _, err := c.Close(context.Background()); err != nil {
		e.Fatal(err)
	}
	// Without a horizon the ID is free once the job left the queue.
	e.enqueue(q, "third", queue.WithID("x"))
	if s := stats(e, q); s.Duplicates != 1 || s.Enqueued != 2 {
		e.Errorf("stats %+v: want 1 duplicate, 2 enqueued", s)
	}
}

func testDedupHorizon(e *env) {
	ev, hooks := newEvents()
	horizon := 20 * e.unit
	q := e.newQueue(hooks, queue.WithDedupHorizon(horizon))
	start := time.Now()
	e.enqueue(q, "v1", queue.WithID("x"))
	accepted := time.Now() // the backend's enqueue time is in [start, accepted]
	got := make(chan string, 10)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		got <- j.Payload
		return nil
	})
	recv(e, got, "job")
	recv(e, ev.acked, "ack")
	if _, err := q.Enqueue(context.Background(), "v2", queue.WithID("x")); !errors.Is(err, queue.ErrDuplicate) {
		e.Fatalf("Enqueue within the horizon after ack: %v, want ErrDuplicate", err)
	}
	inside := horizon - e.unit // virtual time: just inside
	if !e.virtual {
		inside = horizon / 2 // real time: leave room for a slow machine
	}
	time.Sleep(inside - time.Since(start))
	_, err := q.Enqueue(context.Background(), "v3", queue.WithID("x"))
	// Under real time a slow machine may have run past the horizon: the
	// check only binds while the call surely ended inside it.
	if !errors.Is(err, queue.ErrDuplicate) && (e.virtual || time.Since(start) < horizon) {
		e.Fatalf("Enqueue %v into a horizon of %v: %v, want ErrDuplicate", time.Since(start), horizon, err)
	}
	if err == nil {
		e.Skipf("the machine was too slow to test inside the horizon of %v", horizon)
	}
	time.Sleep(horizon + e.unit - time.Since(accepted)) // now surely outside
	e.enqueue(q, "v4", queue.WithID("x"))
	if p := recv(e, got, "job after the horizon"); p != "v4" {
		e.Errorf("handled %q, want v4", p)
	}
	recv(e, ev.acked, "ack")
	if s := stats(e, q); s.Duplicates != 2 || s.Enqueued != 2 || s.Acked != 2 {
		e.Errorf("stats %+v: want 2 duplicates, 2 enqueued and acked", s)
	}
}
