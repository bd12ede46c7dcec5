package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
)

// drainResult is what a Drain running in its own goroutine returned.
type drainResult struct {
	r   queue.Report
	err error
}

// Drain works off the whole backlog before it closes: the ready jobs, the jobs queued behind a
// busy key, a retry whose backoff ends during the drain, and a delayed job, which it waits
// for. Every job it handled is in its report, and nothing is left stored.
func TestDrainHandlesTheWholeBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := queue.New[string](bg)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close(bg)
		gate := make(chan struct{})
		var mu sync.Mutex
		var handled []string
		c, err := q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
			<-gate
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, j.Payload)
			if j.Payload == "flaky" && j.Attempt == 1 {
				return errors.New("try again")
			}
			return nil
		}, queue.WithWorkers(2), queue.WithBackoff(backoff.Constant(10*time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"k1", "k2", "k3"} {
			mustEnqueue(t, q, p, queue.WithKey("k"))
		}
		mustEnqueue(t, q, "flaky")
		mustEnqueue(t, q, "later", queue.WithDelay(time.Minute))
		synctest.Wait() // both workers hold a job, waiting at the gate
		start := time.Now()
		done := make(chan drainResult, 1)
		go func() {
			r, err := c.Drain(bg)
			done <- drainResult{r, err}
		}()
		synctest.Wait() // Drain waits for the backlog
		close(gate)
		res := <-done
		if res.err != nil {
			t.Fatalf("Drain: %v", res.err)
		}
		if took := time.Since(start); took != time.Minute {
			t.Errorf("Drain returned after %v, want 1m0s (when the delayed job was due, and handled)", took)
		}
		if want := (queue.Report{Acked: 5, Returned: 1}); res.r != want {
			t.Errorf("report %+v, want %+v (every job, and the failed attempt of flaky)", res.r, want)
		}
		s, _ := q.Stats(bg)
		if s.Acked != 5 || s.Retried != 1 || s.Ready+s.InFlight+s.Delayed != 0 {
			t.Errorf("stats %+v: want 5 acked, 1 retried, nothing stored", s)
		}
		mu.Lock()
		if len(handled) != 6 {
			t.Errorf("handled %v, want 6 runs", handled)
		}
		mu.Unlock()
		if _, err := c.Close(bg); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Close after Drain: %v, want ErrClosed", err)
		}
		if _, err := c.Drain(bg); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("second Drain: %v, want ErrClosed", err)
		}
	})
}

// Jobs enqueued while Drain runs are backlog too: Drain handles them before it returns. A job
// enqueued after it returned stays stored.
func TestDrainHandlesJobsEnqueuedDuringIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := queue.New[string](bg)
		defer q.Close(bg)
		gate := make(chan struct{})
		c, _ := q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
			if j.Payload == "first" {
				<-gate
			}
			return nil
		}, queue.WithWorkers(1))
		mustEnqueue(t, q, "first")
		synctest.Wait() // the worker holds it
		done := make(chan drainResult, 1)
		go func() {
			r, err := c.Drain(bg)
			done <- drainResult{r, err}
		}()
		synctest.Wait()
		for _, p := range []string{"a", "b", "c"} {
			mustEnqueue(t, q, p)
		}
		time.Sleep(time.Second) // in virtual time: the drain has not ended meanwhile
		select {
		case res := <-done:
			t.Fatalf("Drain returned %+v while a job was in hand", res)
		default:
		}
		close(gate)
		res := <-done
		if res.err != nil || res.r != (queue.Report{Acked: 4}) {
			t.Errorf("Drain = %+v, %v; want 4 acked (the job in hand and the 3 enqueued meanwhile), nil", res.r, res.err)
		}
		mustEnqueue(t, q, "after")
		synctest.Wait()
		if s, _ := q.Stats(bg); s.Acked != 4 || s.Ready != 1 {
			t.Errorf("stats %+v: want 4 acked, the job enqueued after Drain still ready", s)
		}
	})
}

// When ctx ends mid-drain, Drain closes as Close does at its deadline: the running handler is
// cancelled and its job returned, the delayed job stays stored, and Drain returns the report
// and the ctx's cause.
func TestDrainStopsWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := queue.New[string](bg)
		defer q.Close(bg)
		cause := make(chan error, 1)
		c, _ := q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
			if j.Payload == "stuck" {
				<-ctx.Done()
				cause <- context.Cause(ctx)
				return context.Cause(ctx)
			}
			return nil
		}, queue.WithWorkers(2), queue.WithLease(time.Hour))
		mustEnqueue(t, q, "stuck")
		mustEnqueue(t, q, "ok")
		mustEnqueue(t, q, "tomorrow", queue.WithDelay(24*time.Hour))
		synctest.Wait()
		start := time.Now()
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		r, err := c.Drain(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Drain: %v, want the deadline", err)
		}
		if took := time.Since(start); took != time.Minute {
			t.Errorf("Drain returned after %v, want 1m0s", took)
		}
		if r != (queue.Report{Returned: 1}) {
			t.Errorf("report %+v, want the stuck job returned (ok was acked before Drain)", r)
		}
		if err := <-cause; !errors.Is(err, queue.ErrClosed) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the stuck handler's cause %v: want one matching ErrClosed and the deadline", err)
		}
		if s, _ := q.Stats(bg); s.Acked != 1 || s.Ready != 1 || s.Delayed != 1 || s.InFlight != 0 {
			t.Errorf("stats %+v: want ok acked, stuck ready again, tomorrow delayed", s)
		}
	})
}

// A Close called while Drain runs waits for it, then returns ErrClosed.
func TestCloseDuringDrainWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := queue.New[string](bg)
		defer q.Close(bg)
		gate := make(chan struct{})
		c, _ := q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error { <-gate; return nil },
			queue.WithWorkers(1))
		mustEnqueue(t, q, "x")
		synctest.Wait()
		drained := make(chan drainResult, 1)
		go func() {
			r, err := c.Drain(bg)
			drained <- drainResult{r, err}
		}()
		synctest.Wait()
		closed := make(chan error, 1)
		go func() {
			_, err := c.Close(bg)
			closed <- err
		}()
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("Close returned %v during Drain", err)
		default:
		}
		close(gate)
		if res := <-drained; res.err != nil || res.r != (queue.Report{Acked: 1}) {
			t.Errorf("Drain = %+v, %v; want 1 acked", res.r, res.err)
		}
		if err := <-closed; !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Close during Drain: %v, want ErrClosed", err)
		}
	})
}

// A consumer whose own ctx ended takes no more jobs: Drain does not wait for a backlog it
// cannot work off, and says why.
func TestDrainOfAStoppedConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := queue.New[string](bg)
		defer q.Close(bg)
		ctx, cancel := context.WithCancel(bg)
		c, _ := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error { return nil })
		cancel()
		mustEnqueue(t, q, "x")
		start := time.Now()
		_, err := c.Drain(bg)
		if !errors.Is(err, context.Canceled) || time.Since(start) != 0 {
			t.Errorf("Drain after the consumer's ctx ended: %v after %v, want context.Canceled at once", err, time.Since(start))
		}
		if s, _ := q.Stats(bg); s.Ready != 1 {
			t.Errorf("stats %+v: want the job still ready", s)
		}
	})
}

func mustEnqueue(t *testing.T, q *queue.Queue[string], p string, opts ...queue.EnqueueOption) {
	t.Helper()
	if _, err := q.Enqueue(bg, p, opts...); err != nil {
		t.Fatalf("Enqueue(%q): %v", p, err)
	}
}

// Drain does not wait for producers: it stops the first time it finds the backend storing no
// job. A producer slower than the workers lets the backlog empty between its jobs: the job it
// enqueued while a job was in hand is handled, Drain returns at the first gap, and every job
// enqueued after that stays stored.
func TestDrainStopsAtTheFirstEmptyBacklogWithASlowProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := queue.New[string](bg)
		defer q.Close(bg)
		gate := make(chan struct{})
		c, _ := q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
			if j.Payload == "first" {
				<-gate
			}
			return nil
		}, queue.WithWorkers(2))
		mustEnqueue(t, q, "first")
		synctest.Wait() // a worker holds it
		done := make(chan drainResult, 1)
		go func() {
			r, err := c.Drain(bg)
			done <- drainResult{r, err}
		}()
		synctest.Wait() // Drain waits for the job in hand
		mustEnqueue(t, q, "meanwhile")
		synctest.Wait() // the other worker handled it; "first" still holds the backlog
		const later = 300
		produced := make(chan struct{})
		go func() { // one job a second: slower than the workers
			defer close(produced)
			for i := range later {
				time.Sleep(time.Second)
				if _, err := q.Enqueue(bg, fmt.Sprint("later", i)); err != nil {
					t.Errorf("Enqueue: %v", err)
				}
			}
		}()
		close(gate)
		res := <-done
		if res.err != nil || res.r != (queue.Report{Acked: 2}) {
			t.Errorf("Drain = %+v, %v; want 2 acked (the job in hand and the one enqueued before the backlog emptied), nil", res.r, res.err)
		}
		<-produced
		if s, _ := q.Stats(bg); s.Acked != 2 || s.Ready != later {
			t.Errorf("stats: %d acked, %d ready; want 2 acked, the %d jobs enqueued after Drain found the backlog empty still ready", s.Acked, s.Ready, later)
		}
	})
}
