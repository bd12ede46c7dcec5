package queuetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

// testShutdownDrain: Close waits for running handlers and reports them; the
// jobs not started stay for the next consumer.
func testShutdownDrain(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	release := make(chan struct{})
	started := make(chan string, 10)
	for _, p := range []string{"ok", "fail", "rest1", "rest2"} {
		e.enqueue(q, p, queue.WithKey(p)) // keys only to fix the start order per consumer
	}
	c := e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		started <- j.Payload
		<-release
		if j.Payload == "fail" {
			return errBoom
		}
		return nil
	}, queue.WithWorkers(2))
	first := map[string]bool{recv(e, started, "start"): true, recv(e, started, "start"): true}
	closed := make(chan queue.Report, 1)
	go func() {
		r, err := c.Close(context.Background())
		if err != nil {
			e.Errorf("Close: %v", err)
		}
		closed <- r
	}()
	quiet(e, closed, 2*e.unit, "Close returned before its handlers")
	close(release)
	r := recv(e, closed, "Close")
	want := queue.Report{}
	for p := range first {
		if p == "fail" {
			want.Returned++
		} else {
			want.Acked++
		}
	}
	if r != want {
		e.Errorf("report %+v, want %+v (first jobs %v)", r, want, first)
	}
	quiet(e, started, 2*e.unit, "job started after Close")
	// A later consumer gets everything that is left.
	left := 4 - want.Acked
	if s := stats(e, q); s.Ready+s.Delayed != left || s.InFlight != 0 {
		e.Errorf("stats after Close %+v: want %d stored", s, left)
	}
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { return nil })
	for range 4 { // the ack events of both consumers
		recv(e, ev.acked, "ack")
	}
	if s := stats(e, q); s.Acked != 4 {
		e.Errorf("stats %+v: want 4 acked", s)
	}
}

// checkAfterDeadline checks the stats s of testShutdownDeadline's queue after
// a Close that reported r: one job never started and the returned ones ready,
// the abandoned ones in flight, or ready if a release cut short by the
// deadline still reached the backend; nothing retried or dead.
func checkAfterDeadline(e *env, s queue.Stats, r queue.Report) {
	if s.Ready+s.InFlight != 3 || s.Ready < 1+r.Returned || s.InFlight > r.Abandoned || s.Retried != 0 || s.Dead != 0 {
		e.Errorf("stats after Close %+v (report %+v): want returned jobs ready, abandoned ones in flight or ready, nothing retried or dead", s, r)
	}
}

// testShutdownDeadline: at Close's deadline running handlers are cancelled,
// their jobs returned and reported; a later consumer handles them.
func testShutdownDeadline(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	started := make(chan struct{}, 10)
	for range 3 {
		e.enqueue(q, "stuck")
	}
	// A short lease, so that jobs abandoned at the deadline come back soon.
	lease := queue.WithLease(10 * e.unit)
	c := e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		started <- struct{}{}
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), queue.ErrClosed) {
			return fmt.Errorf("cause %v, want one matching ErrClosed", context.Cause(ctx))
		}
		return context.Cause(ctx)
	}, queue.WithWorkers(2), lease)
	recv(e, started, "start")
	recv(e, started, "start")
	start := time.Now() // before the deadline is set, so elapsed is a lower bound
	ctx, cancel := context.WithTimeout(context.Background(), 2*e.unit)
	defer cancel()
	r, err := c.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		e.Errorf("Close: %v, want deadline exceeded", err)
	}
	e.elapsed("Close", time.Since(start), 2*e.unit)
	// The end of Close's ctx ends its backend calls: a backend that honours
	// that ctx fails the release of the cancelled handlers' jobs, which are
	// then abandoned (redelivered when their leases end) instead of
	// returned.
	if r.Returned+r.Abandoned != 2 || r.Acked != 0 || r.DeadLettered != 0 {
		e.Errorf("report %+v, want 2 returned or abandoned", r)
	}
	checkAfterDeadline(e, stats(e, q), r)
	attempts := make(chan int, 3)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { attempts <- j.Attempt; return nil }, lease)
	for range 3 {
		recv(e, ev.acked, "ack")
		// An abandoned job's lease ended in the backend: its attempt was
		// spent.
		if a := recv(e, attempts, "attempt"); a != 1 && !e.s.caps.ReleaseCountsAttempt && r.Abandoned == 0 {
			e.Errorf("returned job delivered as attempt %d, want 1", a)
		}
	}
}

// testQueueClose: Queue.Close closes the queue's consumers (waiting for their handlers) and its
// backend; every call after it fails with ErrClosed, but Health, and Stats' counters.
func testQueueClose(e *env) {
	q := e.newQueue()
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	e.enqueue(q, "a")
	h := func(ctx context.Context, j queue.Job[string]) error {
		started <- struct{}{}
		<-release
		return nil
	}
	c := e.consume(q, h, queue.WithWorkers(1))
	recv(e, started, "start")
	closed := make(chan error, 1)
	go func() { closed <- q.Close(context.Background()) }()
	quiet(e, closed, 2*e.unit, "Queue.Close returned before its consumer's handler")
	close(release)
	if err := recv(e, closed, "Queue.Close"); err != nil {
		e.Fatalf("Queue.Close: %v", err)
	}
	bg := context.Background()
	if _, err := c.Close(bg); !errors.Is(err, queue.ErrClosed) {
		e.Errorf("Consumer.Close after Queue.Close: %v, want ErrClosed", err)
	}
	if _, err := q.Enqueue(bg, "b"); !errors.Is(err, queue.ErrClosed) {
		e.Errorf("Enqueue after Close: %v, want ErrClosed", err)
	}
	if c, err := q.Consume(bg, h); !errors.Is(err, queue.ErrClosed) || c != nil {
		e.Errorf("Consume after Close: %v, %v; want nil, ErrClosed", c, err)
	}
	if err := q.Redrive(bg, "a"); !errors.Is(err, queue.ErrClosed) {
		e.Errorf("Redrive after Close: %v, want ErrClosed", err)
	}
	if err := q.Purge(bg, "a"); !errors.Is(err, queue.ErrClosed) {
		e.Errorf("Purge after Close: %v, want ErrClosed", err)
	}
	for _, err := range q.DeadLetters(bg) {
		if !errors.Is(err, queue.ErrClosed) {
			e.Errorf("DeadLetters after Close: %v, want ErrClosed", err)
		}
	}
	s, err := q.Stats(bg)
	if !errors.Is(err, queue.ErrClosed) || s.Enqueued != 1 || s.Acked != 1 {
		e.Errorf("Stats after Close: %+v, %v; want the counters (1 enqueued and acked) and ErrClosed", s, err)
	}
	if h := q.Health(); !h.Reachable {
		e.Errorf("Health after Close: %+v, want reachable", h)
	}
	if err := q.Close(bg); !errors.Is(err, queue.ErrClosed) {
		e.Errorf("second Queue.Close: %v, want ErrClosed", err)
	}
}

// testBackendClose drives the backend alone: Close ends a Receive waiting for a job with
// ErrClosed, refuses later Enqueue and Receive calls with ErrClosed, and a second Close
// returns nil.
func testBackendClose(e *env) {
	b := e.openBackend(driver.Config{})
	bg := context.Background()
	waiting := make(chan error, 1)
	go func() {
		var d driver.Delivery
		waiting <- b.Receive(bg, 10*e.unit, &d)
	}()
	e.receiversWait() // the receiver waits
	if err := b.Close(bg); err != nil {
		e.Fatalf("Close: %v", err)
	}
	if err := recv(e, waiting, "the waiting Receive"); !errors.Is(err, queue.ErrClosed) {
		e.Errorf("Receive waiting at Close: %v, want ErrClosed", err)
	}
	if _, err := b.Enqueue(bg, driver.Message{ID: "X", Body: []byte("x"), Value: "x"}); !errors.Is(err, queue.ErrClosed) {
		e.Errorf("Enqueue after Close: %v, want ErrClosed", err)
	}
	var d driver.Delivery
	if err := b.Receive(bg, 10*e.unit, &d); !errors.Is(err, queue.ErrClosed) {
		e.Errorf("Receive after Close: %v, want ErrClosed", err)
	}
	if err := b.Close(bg); err != nil {
		e.Errorf("second Close: %v, want nil", err)
	}
}
