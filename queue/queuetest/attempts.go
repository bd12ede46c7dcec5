package queuetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

// testAttemptsAreRuns holds a backend to the attempts contract: attempts are handler runs, and
// a job's history has one entry per run. A job whose every run ended without a settle (its
// process died in the handler: started, never settled, its lease left to expire), max attempts
// times, is dead-lettered by the next consumer without a run: reason attempts, attempt max (in
// the dead letter and the OnDead event), and exactly max history entries numbered 1 to max,
// each the backend's record of a lease that expired, dated from the run's lease to when the
// backend took the job back. A job whose handler fails on every run ends alike, with the
// handler's errors.
func testAttemptsAreRuns(e *env) {
	const maxAttempts = 3
	ev, hooks := newEvents()
	b := e.s.newBackend(e.T)
	q, err := queue.New[string](context.Background(), queue.WithBackend(b), hooks)
	if err != nil {
		e.Fatalf("queue.New: %v", err)
	}
	e.Cleanup(func() { _ = q.Close(context.Background()) })
	lease := 10 * e.unit      // the consumer's
	blease := lease + lease/2 // the backend lease a consumer with lease asks of Receive
	dies := e.enqueue(q, "dies")
	runs := abandonRuns(e, b, dies, blease, maxAttempts)

	fails := e.enqueue(q, "fails")
	var (
		mu    sync.Mutex
		calls = map[string]int{}
	)
	e.consume(q, func(_ context.Context, j queue.Job[string]) error {
		mu.Lock()
		calls[j.Payload]++
		mu.Unlock()
		return fmt.Errorf("attempt %d: %w", j.Attempt, errBoom)
	}, queue.WithWorkers(2), queue.WithLease(lease), queue.WithMaxAttempts(maxAttempts))
	for range 2 {
		d := recv(e, ev.dead, "dead letter")
		if d.Reason != queue.ReasonAttempts || d.Attempt != maxAttempts || d.ID != dies && d.ID != fails {
			e.Errorf("OnDead %+v: want %s or %s, reason attempts, attempt %d (its runs)", d, dies, fails, maxAttempts)
		}
	}
	mu.Lock()
	if calls["dies"] != 0 || calls["fails"] != maxAttempts {
		e.Errorf("handler runs %v: want none of dies (its attempts were spent), %d of fails", calls, maxAttempts)
	}
	mu.Unlock()
	checkRunLetters(e, deadLetters(e, q), dies, runs, blease, maxAttempts)
}

// checkRunLetters checks testAttemptsAreRuns' dead letters: each with reason attempts, attempt
// maxAttempts and one history entry per run, numbered from 1; those of job dies (whose runs
// started by runs, each left to its lease) each the record of a lease that expired, those of
// the other the handler's errors.
func checkRunLetters(e *env, dls []queue.DeadLetter[string], dies string, runs []time.Time, lease time.Duration, maxAttempts int) {
	e.Helper()
	if len(dls) != 2 {
		e.Errorf("%d dead letters, want 2", len(dls))
	}
	for _, dl := range dls {
		if dl.Reason != queue.ReasonAttempts || dl.Job.Attempt != maxAttempts || len(dl.History) != maxAttempts {
			e.Errorf("dead letter %+v: want reason attempts, attempt %d, %d history entries", dl, maxAttempts, maxAttempts)
			continue
		}
		for i, a := range dl.History {
			want := fmt.Sprintf("attempt %d: boom", i+1)
			if dl.Job.ID == dies {
				want = queue.ErrLeaseExpired.Error()
				checkExpiredRun(e, i, a, runs, lease)
			}
			if a.Number != i+1 || a.Error != want {
				e.Errorf("%s history[%d] = %+v, want number %d, error %q", dl.Job.ID, i, a, i+1, want)
			}
		}
	}
}

// abandonRuns drives b alone: it receives job id n times with lease, starts a handler on each
// delivery and never settles it (its process died in the handler), and returns when each Start
// call returned. Delivery k must be attempt k. A Start refused with ErrLeaseLost (a backend that
// cannot yet tell the run before from a live one) starts nothing: the job is received again.
func abandonRuns(e *env, b driver.Backend, id string, lease time.Duration, n int) []time.Time {
	e.Helper()
	var starts []time.Time
	for len(starts) < n {
		ctx, cancel := context.WithTimeout(context.Background(), e.timeout())
		var d driver.Delivery
		err := b.Receive(ctx, lease, &d)
		cancel()
		if err != nil {
			e.Fatalf("Receive (run %d): %v", len(starts)+1, err)
		}
		if d.ID != id || d.Attempt != len(starts)+1 {
			e.Fatalf("delivery %+v: want %s, attempt %d", d, id, len(starts)+1)
		}
		switch err := b.Start(context.Background(), &d); {
		case err == nil:
			starts = append(starts, time.Now())
		case !errors.Is(err, queue.ErrLeaseLost):
			e.Fatalf("Start (run %d): %v", len(starts)+1, err)
		}
	}
	return starts
}

// checkExpiredRun checks the dates of a, the history entry of run i of a job whose runs
// started by runs (when their Start calls returned), each left to its lease: Start is the
// run's start or its lease's, after the run before; End is when the backend took the job back,
// after the run and before the next one. On the virtual clock, exactly the Start call and the
// lease's end.
func checkExpiredRun(e *env, i int, a queue.Attempt, runs []time.Time, lease time.Duration) {
	e.Helper()
	var after, before time.Time // the bounds of End
	after = runs[i]
	if i+1 < len(runs) {
		before = runs[i+1]
	}
	var wrong bool
	if e.virtual {
		wrong = !a.Start.Equal(runs[i]) || !a.End.Equal(runs[i].Add(lease))
	} else {
		// A broker backend may take the job back up to a tenth of the lease early by this
		// process's clock (it starts the lease a little before the run).
		wrong = a.Start.After(runs[i]) || i > 0 && a.Start.Before(runs[i-1]) ||
			a.End.Before(after) || !before.IsZero() && a.End.After(before) || a.End.Sub(a.Start) < lease-lease/10
	}
	if wrong {
		e.Errorf("history[%d] %+v: want Start at the run's %v (or its lease's), End when its lease of %v was over and before the next run %v",
			i, a, runs[i], lease, before)
	}
}
