package queuetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// testSnooze holds a backend to the snooze contract (driver.Backend.Nack of an Attempt with
// Snoozed set): a snooze spends no attempt (a consumer allowing one attempt runs the job again
// and again, each run attempt 1), the job comes back after the snooze's delay, the backend
// counts the job's snoozes across deliveries (Message.Snoozes), and each snooze is an entry of
// the job's history. Job "twice" snoozes on every run: with at most 2 snoozes, its third run
// dead-letters it with reason snoozes, attempt 1, and 3 history entries (two snoozed, then
// the refused snooze). Job "once" snoozes once, then succeeds: acked at attempt 1.
func testSnooze(e *env) {
	const maxSnoozes = 2
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	r := &snoozeRuns{runs: map[string][]time.Time{}, delay: 3 * e.unit}
	e.consume(q, r.handle, queue.WithMaxAttempts(1), queue.WithMaxSnoozes(maxSnoozes))
	twice := e.enqueue(q, "twice")
	once := e.enqueue(q, "once")

	for range maxSnoozes + 1 {
		r := recv(e, ev.retry, "a snooze")
		if !errors.Is(r.Err, queue.ErrSnoozed) || r.Delay != 3*e.unit || r.Attempt != 1 {
			e.Errorf("OnRetry %+v: want a snooze (ErrSnoozed) of %v, attempt 1", r, 3*e.unit)
		}
	}
	if a := recv(e, ev.acked, "once acked"); a.ID != once || a.Attempt != 1 {
		e.Errorf("OnSuccess %+v: want %s at attempt 1", a, once)
	}
	d := recv(e, ev.dead, "twice dead-lettered")
	if d.ID != twice || d.Reason != queue.ReasonSnoozes || d.Attempt != 1 || !errors.Is(d.Err, queue.ErrSnoozed) {
		e.Errorf("OnDead %+v: want %s, reason snoozes, attempt 1, an error matching ErrSnoozed", d, twice)
	}
	r.check(e, map[string]int{"twice": maxSnoozes + 1, "once": 2})
	checkSnoozeLetter(e, deadLetters(e, q), twice, maxSnoozes)
	if s := stats(e, q); s.Snoozed != maxSnoozes+1 || s.Retried != 0 || s.DeadLettered[queue.ReasonSnoozes] != 1 {
		e.Errorf("Stats: Snoozed %d, Retried %d, dead by snoozes %d; want %d, 0, 1", s.Snoozed, s.Retried,
			s.DeadLettered[queue.ReasonSnoozes], maxSnoozes+1)
	}
}

// snoozeRuns is testSnooze's handler and its record of the runs, by payload.
type snoozeRuns struct {
	mu    sync.Mutex
	runs  map[string][]time.Time
	delay time.Duration
}

// handle snoozes job "once" on its first run only, any other job on every run; a run at
// another attempt than 1 dead-letters the job as permanent.
func (r *snoozeRuns) handle(_ context.Context, j queue.Job[string]) error {
	r.mu.Lock()
	r.runs[j.Payload] = append(r.runs[j.Payload], time.Now())
	n := len(r.runs[j.Payload])
	r.mu.Unlock()
	if j.Attempt != 1 {
		return retry.Permanent(fmt.Errorf("run %d of %s: attempt %d, want 1", n, j.Payload, j.Attempt))
	}
	if j.Payload == "once" && n > 1 {
		return nil
	}
	return fmt.Errorf("waiting: %w", queue.Snooze(r.delay))
}

// check checks the runs: as many as want says per payload, each a snooze's delay after the
// one before.
func (r *snoozeRuns) check(e *env, want map[string]int) {
	e.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, n := range want {
		rs := r.runs[p]
		if len(rs) != n {
			e.Errorf("%s ran %d times, want %d", p, len(rs), n)
			continue
		}
		for i := 1; i < len(rs); i++ {
			e.elapsed(fmt.Sprintf("%s run %d", p, i+1), rs[i].Sub(rs[i-1]), r.delay)
		}
	}
}

// checkSnoozeLetter checks testSnooze's one dead letter, of job id: reason snoozes, attempt 1,
// and a history of max snoozed entries numbered 1, then the refused snooze's, not snoozed.
func checkSnoozeLetter(e *env, dls []queue.DeadLetter[string], id string, max int) {
	e.Helper()
	if len(dls) != 1 || dls[0].Job.ID != id || dls[0].Reason != queue.ReasonSnoozes || dls[0].Job.Attempt != 1 {
		e.Fatalf("dead letters %+v: want one, of %s, reason snoozes, attempt 1", dls, id)
	}
	h := dls[0].History
	if len(h) != max+1 {
		e.Fatalf("history %+v: want %d entries", h, max+1)
	}
	for i, a := range h {
		snoozed := i < max
		if a.Number != 1 || a.Snoozed != snoozed || a.Start.IsZero() || a.End.Before(a.Start) {
			e.Errorf("history[%d] = %+v: want number 1, snoozed %v, dated", i, a, snoozed)
		}
	}
	if want := "queue: snoozed for " + (3 * e.unit).String(); h[0].Error != "waiting: "+want {
		e.Errorf("history[0].Error %q, want %q", h[0].Error, "waiting: "+want)
	}
}
