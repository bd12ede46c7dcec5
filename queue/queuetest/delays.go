package queuetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

func testDelayedJob(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	start := time.Now()
	started := make(chan time.Duration, 2)
	e.enqueue(q, "later", queue.WithDelay(5*e.unit))
	e.enqueue(q, "at", queue.WithNotBefore(start.Add(2*e.unit)))
	// Both are delayed until the first NotBefore, 2 units after start; a Stats call that
	// returns later (a loaded machine) may see the first one ready, so it is held only to the
	// count then.
	s := stats(e, q)
	switch early := time.Since(start) < 2*e.unit; {
	case early && s.Delayed != 2:
		e.Errorf("stats %+v before the first NotBefore: want 2 delayed", s)
	case !early && s.Delayed+s.Ready != 2:
		e.Errorf("stats %+v: want 2 stored, delayed or ready", s)
	}
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		started <- time.Since(start)
		return nil
	})
	e.elapsed("NotBefore job started", recv(e, started, "job at NotBefore"), 2*e.unit)
	e.elapsed("delayed job started", recv(e, started, "delayed job"), 5*e.unit)
	recv(e, ev.acked, "ack")
	recv(e, ev.acked, "ack")
}

func testRetrySchedule(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	start := time.Now()
	var times []time.Duration
	e.enqueue(q, "flaky")
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		times = append(times, time.Since(start))
		if j.Attempt < 4 {
			return fmt.Errorf("attempt %d: %w", j.Attempt, errBoom)
		}
		return nil
	}, queue.WithWorkers(1), queue.WithBackoff(backoff.Exponential(e.unit, 2, 100*e.unit)))
	for i := range 3 {
		r := recv(e, ev.retry, "retry")
		if r.Attempt != i+1 || !errors.Is(r.Err, errBoom) || r.Delay != e.unit<<i {
			e.Errorf("retry event %+v: want attempt %d, error boom, delay %v", r, i+1, e.unit<<i)
		}
	}
	recv(e, ev.acked, "ack")
	want := []time.Duration{0, e.unit, 3 * e.unit, 7 * e.unit}
	if len(times) != 4 {
		e.Fatalf("handler ran %d times, want 4", len(times))
	}
	for i := range want {
		e.elapsed(fmt.Sprintf("attempt %d", i+1), times[i], want[i])
	}
	if s := stats(e, q); s.Retried != 3 || s.Acked != 1 {
		e.Errorf("stats %+v: want 3 retried, 1 acked", s)
	}
}

func testStartBy(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks, queue.WithMaxWait(5*e.unit))
	late := e.enqueue(q, "late", queue.WithStartBy(time.Now().Add(2*e.unit)))
	defaulted := e.enqueue(q, "defaulted")
	time.Sleep(6 * e.unit)
	ran := make(chan string, 3)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { ran <- j.ID; return nil })
	got := map[string]queue.Reason{}
	for range 2 {
		d := recv(e, ev.dead, "expiry")
		got[d.ID] = d.Reason
	}
	if got[late] != queue.ReasonExpired || got[defaulted] != queue.ReasonExpired {
		e.Errorf("dead letters %v: want both expired", got)
	}
	quiet(e, ran, 2*e.unit, "expired job handled")
	if s := stats(e, q); s.DeadLettered[queue.ReasonExpired] != 2 {
		e.Errorf("stats %+v: want 2 expired", s)
	}
}

// A job delivered before its start-by deadline and released (as a consumer
// does at shutdown) is not expired when it comes back after the deadline:
// it was started in time (Delivery.Redelivered), whatever its attempt
// number.
func testStartByAfterRelease(e *env) {
	ev, hooks := newEvents()
	b := e.s.newBackend(e.T)
	q, err := queue.New[string](context.Background(), queue.WithBackend(b), hooks)
	if err != nil {
		e.Fatalf("queue.New: %v", err)
	}
	id := e.enqueue(q, "x", queue.WithStartBy(time.Now().Add(5*e.unit)))
	bg := context.Background()
	var d driver.Delivery
	if err := b.Receive(bg, 150*e.unit, &d); err != nil || d.ID != id {
		e.Fatalf("Receive: %v, %q; want %s", err, d.ID, id)
	}
	if err := b.Release(bg, &d, 0); err != nil {
		e.Fatalf("Release: %v", err)
	}
	time.Sleep(6 * e.unit) // past the start-by deadline
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { return nil }, queue.WithWorkers(1))
	if a := recv(e, ev.acked, "ack of the released job"); a.ID != id {
		e.Errorf("acked %s, want %s", a.ID, id)
	}
	quiet(e, ev.dead, e.unit, "dead letter of a job started in time")
}
