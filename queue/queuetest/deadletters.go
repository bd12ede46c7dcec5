package queuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

func testMaxAttempts(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	calls := 0
	id := e.enqueue(q, "doomed")
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		calls++
		return fmt.Errorf("attempt %d: %w", j.Attempt, errBoom)
	}, queue.WithWorkers(1), queue.WithMaxAttempts(3))
	d := recv(e, ev.dead, "dead letter")
	if d.ID != id || d.Reason != queue.ReasonAttempts || d.Attempt != 3 || !errors.Is(d.Err, errBoom) {
		e.Errorf("dead event %+v: want %s, reason attempts, attempt 3, error boom", d, id)
	}
	if calls != 3 {
		e.Errorf("handler ran %d times, want 3", calls)
	}
	checkDoomedLetter(e, deadLetters(e, q), id)
	if s := stats(e, q); s.Dead != 1 || s.DeadLettered[queue.ReasonAttempts] != 1 || s.Retried != 2 {
		e.Errorf("stats %+v: want 1 dead (attempts), 2 retried", s)
	}
}

// checkDoomedLetter checks testMaxAttempts' dead letters: one, job id with payload doomed,
// reason attempts, and the history of its three attempts, each numbered, with its error and
// its start and end.
func checkDoomedLetter(e *env, dls []queue.DeadLetter[string], id string) {
	e.Helper()
	if len(dls) != 1 {
		e.Fatalf("%d dead letters, want 1", len(dls))
	}
	dl := dls[0]
	if dl.Job.ID != id || dl.Job.Payload != "doomed" || dl.Reason != queue.ReasonAttempts || dl.Job.Attempt != 3 || len(dl.History) != 3 {
		e.Fatalf("dead letter %+v: want payload doomed, reason attempts, attempt 3, 3 history entries", dl)
	}
	for i, a := range dl.History {
		if a.Number != i+1 || a.Error != fmt.Sprintf("attempt %d: boom", i+1) || a.Start.IsZero() || a.End.Before(a.Start) {
			e.Errorf("history[%d] = %+v", i, a)
		}
	}
}

func testPermanent(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	calls := 0
	e.enqueue(q, "bad input")
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		calls++
		return retry.Permanent(errBoom)
	}, queue.WithMaxAttempts(5))
	d := recv(e, ev.dead, "dead letter")
	if d.Reason != queue.ReasonPermanent || d.Attempt != 1 || !errors.Is(d.Err, errBoom) {
		e.Errorf("dead event %+v: want reason permanent after attempt 1", d)
	}
	if calls != 1 {
		e.Errorf("handler ran %d times, want 1", calls)
	}
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Reason != queue.ReasonPermanent || len(dls[0].History) != 1 ||
		!strings.Contains(dls[0].History[0].Error, "boom") {
		e.Errorf("dead letters %+v", dls)
	}
}

func testPanic(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	calls := 0
	e.enqueue(q, "poison")
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		calls++
		panic("poison pill")
	}, queue.WithMaxAttempts(5))
	d := recv(e, ev.dead, "dead letter")
	if d.Reason != queue.ReasonPanic || d.Attempt != 1 {
		e.Errorf("dead event %+v: want reason panic after attempt 1", d)
	}
	if calls != 1 {
		e.Errorf("handler ran %d times, want 1", calls)
	}
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Reason != queue.ReasonPanic || len(dls[0].History) != 1 ||
		!strings.Contains(dls[0].History[0].Error, "poison pill") {
		e.Errorf("dead letters %+v", dls)
	}
	if s := stats(e, q); s.DeadLettered[queue.ReasonPanic] != 1 {
		e.Errorf("stats %+v: want 1 dead by panic", s)
	}
}

func testRedrive(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	poisoned := true
	var mu sync.Mutex
	id := e.enqueue(q, "poison")
	other := e.enqueue(q, "junk")
	attempts := make(chan int, 5)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		mu.Lock()
		p := poisoned
		mu.Unlock()
		if j.ID == id {
			attempts <- j.Attempt
		}
		if p {
			panic("bad " + j.Payload)
		}
		return nil
	}, queue.WithWorkers(1))
	recv(e, ev.dead, "dead letter")
	recv(e, ev.dead, "dead letter")
	if n := len(deadLetters(e, q)); n != 2 {
		e.Fatalf("%d dead letters, want 2", n)
	}
	mu.Lock()
	poisoned = false // the bug is fixed
	mu.Unlock()
	if err := q.Redrive(context.Background(), id); err != nil {
		e.Fatalf("Redrive: %v", err)
	}
	if a := recv(e, attempts, "attempt"); a != 1 {
		e.Errorf("first attempt %d", a)
	}
	if a := recv(e, attempts, "redriven attempt"); a != 1 {
		e.Errorf("redriven job delivered as attempt %d, want 1 (fresh count)", a)
	}
	if a := recv(e, ev.acked, "ack of redriven job"); a.ID != id {
		e.Errorf("acked %s, want %s", a.ID, id)
	}
	if err := q.Redrive(context.Background(), id); !errors.Is(err, queue.ErrNotFound) {
		e.Errorf("second Redrive: %v, want ErrNotFound", err)
	}
	if err := q.Purge(context.Background(), other); err != nil {
		e.Fatalf("Purge: %v", err)
	}
	if err := q.Purge(context.Background(), other); !errors.Is(err, queue.ErrNotFound) {
		e.Errorf("second Purge: %v, want ErrNotFound", err)
	}
	if dls := deadLetters(e, q); len(dls) != 0 {
		e.Errorf("dead letters after redrive and purge: %+v", dls)
	}
}

// testDeadLetterIDReplaced: two jobs with one ID, one after the other,
// both dead: the newer dead letter replaces the older, so that Redrive and
// Purge name one job.
func testDeadLetterIDReplaced(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		return retry.Permanent(errors.New("bad " + j.Payload))
	}, queue.WithWorkers(1))
	for _, p := range []string{"v1", "v2"} {
		e.enqueue(q, p, queue.WithID("X"))
		if d := recv(e, ev.dead, "dead letter"); d.ID != "X" {
			e.Fatalf("dead %s, want X", d.ID)
		}
	}
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Job.ID != "X" || dls[0].Job.Payload != "v2" {
		e.Fatalf("dead letters %+v: want one, X with payload v2", dls)
	}
	if err := q.Purge(context.Background(), "X"); err != nil {
		e.Errorf("Purge(X): %v", err)
	}
	if err := q.Purge(context.Background(), "X"); !errors.Is(err, queue.ErrNotFound) {
		e.Errorf("second Purge(X): %v, want ErrNotFound", err)
	}
	if s := stats(e, q); s.Dead != 0 {
		e.Errorf("stats %+v: want no dead letters", s)
	}
}

// testDeadLetterLimit: at the dead-letter limit the oldest dead letter is
// evicted, counted and reported; the newest are kept, oldest first.
func testDeadLetterLimit(e *env) {
	ev, _ := newEvents()
	evicted := make(chan string, 10)
	q := e.newQueue(queue.WithDeadLetterLimit(2), queue.WithHooks(queue.Hooks{
		OnDead:        func(_ context.Context, x queue.Event) { ev.dead <- x },
		OnDeadEvicted: func(ctx context.Context, x queue.Event) { evicted <- x.ID },
	}))
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		return retry.Permanent(errors.New("bad " + j.Payload))
	}, queue.WithWorkers(1))
	for _, id := range []string{"d1", "d2", "d3"} {
		e.enqueue(q, id, queue.WithID(id))
		if d := recv(e, ev.dead, "dead letter"); d.ID != id {
			e.Fatalf("dead %s, want %s", d.ID, id)
		}
	}
	if id := recv(e, evicted, "eviction"); id != "d1" {
		e.Errorf("evicted %s, want d1, the oldest", id)
	}
	var ids []string
	for _, dl := range deadLetters(e, q) {
		ids = append(ids, dl.Job.ID)
	}
	if !slices.Equal(ids, []string{"d2", "d3"}) {
		e.Errorf("dead letters %v, want [d2 d3]", ids)
	}
	if s := stats(e, q); s.Dead != 2 || s.DeadEvicted != 1 {
		e.Errorf("stats %+v: want 2 dead letters, 1 evicted", s)
	}
	quiet(e, evicted, e.unit, "second eviction")
}
