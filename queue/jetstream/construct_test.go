package jetstream_test

import (
	"context"
	"errors"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
	"github.com/corral-go/corral/queue/queuetest"
)

// wantPanic checks that f panics in the caller's goroutine with exactly the message want.
func wantPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if v := recover(); v != want {
			t.Errorf("recovered %#v; want a panic with %q", v, want)
		}
	}()
	f()
}

// noJetStream stands in for a JetStream that New never gets to use: it panics before.
type noJetStream struct{ natsjs.JetStream }

// New does no I/O and returns no error: what would make it fail is a mistake in the program,
// and panics, naming the package and the call. So do options with impossible settings.
func TestNewPanicsOnBadInput(t *testing.T) {
	js := noJetStream{}
	wantPanic(t, `jetstream: New(nil, "orders"): nil JetStream`, func() { jetstream.New(nil, "orders") })
	wantPanic(t, `jetstream: New(js, "a.b"): invalid queue name (want 1-64 of [A-Za-z0-9_-])`, func() { jetstream.New(js, "a.b") })
	wantPanic(t, `jetstream: New(js, ""): invalid queue name (want 1-64 of [A-Za-z0-9_-])`, func() { jetstream.New(js, "") })
	wantPanic(t, "jetstream: nil option", func() { jetstream.New(js, "orders", nil) })
	wantPanic(t, "jetstream: WithReplicas(0): need at least 1", func() { jetstream.WithReplicas(0) })
	wantPanic(t, "jetstream: WithPrefetch(0): need at least 1", func() { jetstream.WithPrefetch(0) })
	wantPanic(t, "jetstream: WithCallTimeout(0s): need a positive timeout", func() { jetstream.WithCallTimeout(0) })
	wantPanic(t, "jetstream: WithCallTimeout(-1s): need a positive timeout", func() { jetstream.WithCallTimeout(-time.Second) })
}

// Every exported method of a zero Backend, whatever its arguments, panics at once, in the
// caller's goroutine, saying what to use.
func TestZeroBackendPanicsSayingWhatToUse(t *testing.T) {
	var b jetstream.Backend
	queuetest.RunZeroBackend(t, &b, "jetstream: zero Backend: use jetstream.New", map[string]func(){
		"Delete":      func() { _ = b.Delete(context.Background()) },
		"Requeued":    func() { _ = b.Requeued() },
		"Resurrected": func() { _ = b.Resurrected() },
	})
}

// What the broker stores outlives the queue that stored it, as it outlives the process: a
// queue closed with ready and delayed jobs and a dead letter leaves all three on the server,
// and the next process's queue of the same name finds them.
func TestStoredJobsOutliveTheQueue(t *testing.T) {
	srv := natstest.Start(t)
	name := natstest.Prefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func() *queue.Queue[string] {
		t.Helper()
		js, err := natsjs.New(srv.Connect(t))
		if err != nil {
			t.Fatal(err)
		}
		q, err := queue.New[string](ctx, queue.WithBackend(jetstream.New(js, name)))
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	q1 := open()
	dead := make(chan struct{})
	c, err := q1.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		defer close(dead)
		return errors.New("declined") // with MaxAttempts 1: a dead letter
	}, queue.WithWorkers(1), queue.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q1.Enqueue(ctx, "poison", queue.WithID("poison")); err != nil {
		t.Fatal(err)
	}
	<-dead
	if _, err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q1.Enqueue(ctx, "ready", queue.WithID("ready")); err != nil {
		t.Fatal(err)
	}
	if _, err := q1.Enqueue(ctx, "later", queue.WithID("later"), queue.WithDelay(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := q1.Close(ctx); err != nil {
		t.Fatal(err)
	}

	q2 := open()
	defer q2.Close(ctx)
	s, err := q2.Stats(ctx)
	if err != nil || s.Ready != 1 || s.Delayed != 1 || s.Dead != 1 || s.InFlight != 0 {
		t.Fatalf("stats of the next queue: %+v, %v; want 1 ready, 1 delayed, 1 dead letter", s, err)
	}
	for dl, err := range q2.DeadLetters(ctx) {
		if err != nil || dl.Job.ID != "poison" || dl.Reason != queue.ReasonAttempts || dl.Job.Payload != "poison" {
			t.Errorf("dead letter %+v, %v; want poison, dead after its attempts", dl, err)
		}
	}
	got := make(chan string, 2)
	c2, err := q2.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error { got <- j.ID; return nil },
		queue.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	if id := <-got; id != "ready" {
		t.Errorf("the next queue handled %s, want ready", id)
	}
}
