package queue

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// closeResult is what a Close running in its own goroutine returned.
type closeResult struct {
	r   Report
	err error
}

// Close owns its handlers: when its ctx ends while a handler ignores the
// cancellation, Close cancels it, then waits for it to return, keeps its job
// leased meanwhile (the lease renewed: nobody else gets the job), settles it
// and waits for its workers. When Close returns, no goroutine of the consumer is
// left.
func TestCloseWaitsForHandlerIgnoringCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		others := goleak.IgnoreCurrent()
		ctx := context.Background()
		q, _ := New[string](context.Background())
		release := make(chan struct{})
		started := make(chan struct{})
		cause := make(chan error, 1)
		c, _ := q.Consume(ctx, func(ctx context.Context, j Job[string]) error {
			close(started)
			<-release // ignores ctx
			cause <- context.Cause(ctx)
			return nil
		}, WithWorkers(1), WithLease(time.Minute))
		if _, err := q.Enqueue(ctx, "stubborn"); err != nil {
			t.Fatal(err)
		}
		<-started
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		closed := make(chan closeResult, 1)
		go func() {
			r, err := c.Close(cctx)
			closed <- closeResult{r, err}
		}()
		// Far past Close's deadline and the backend lease (1.5 minutes).
		time.Sleep(10 * time.Minute)
		var res closeResult
		select {
		case res = <-closed:
			t.Errorf("Close returned %+v, %v while its handler was running", res.r, res.err)
			close(release)
		default:
			if s, _ := q.Stats(ctx); s.InFlight != 1 || s.Ready != 0 {
				t.Errorf("stats %+v: want the job still in flight (lease renewed while the handler runs)", s)
			}
			close(release)
			res = <-closed
		}
		if got := time.Since(start); got != 10*time.Minute {
			t.Errorf("Close returned after %v, want 10m (when the handler returned)", got)
		}
		if !errors.Is(res.err, context.DeadlineExceeded) || res.r != (Report{Acked: 1}) {
			t.Errorf("Close = %+v, %v; want 1 acked, deadline exceeded", res.r, res.err)
		}
		if err := <-cause; !errors.Is(err, ErrClosed) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("handler ctx cause %v: want one matching ErrClosed and the deadline", err)
		}
		if s, _ := q.Stats(ctx); s.Ready+s.InFlight+s.Delayed != 0 || s.Acked != 1 {
			t.Errorf("stats after Close %+v: want the job acked", s)
		}
		// Every goroutine of the consumer (workers, lease keeper, renewals) has
		// returned.
		goleak.VerifyNone(t, others)
	})
}

// gatedBackend is a Memory whose Ack, Release or Nack can be made to fail,
// and whose Ack can be paused after the job was acked.
type gatedBackend struct {
	*memory.Backend
	acked  chan struct{} // if non-nil, Ack sends on it once the job is acked, then waits for resume
	resume chan struct{}
	fail   error // if non-nil, Ack, Nack and Release return it instead
}

func (b *gatedBackend) Ack(ctx context.Context, d *driver.Delivery) error {
	if b.fail != nil {
		return b.fail
	}
	err := b.Backend.Ack(ctx, d)
	if b.acked != nil {
		b.acked <- struct{}{}
		<-b.resume
	}
	return err
}

func (b *gatedBackend) Nack(ctx context.Context, d *driver.Delivery, delay time.Duration, a Attempt) error {
	if b.fail != nil {
		return b.fail
	}
	return b.Backend.Nack(ctx, d, delay, a)
}

func (b *gatedBackend) Release(ctx context.Context, d *driver.Delivery, delay time.Duration) error {
	if b.fail != nil {
		return b.fail
	}
	return b.Backend.Release(ctx, d, delay)
}

// Regression: a job acked in the backend just before Close was called (its
// worker not yet done settling) was counted in the report as acked during
// the drain. The report counts the jobs whose handler returned after Close
// was called, whenever their settling ends.
func TestCloseReportExcludesJobSettledBeforeClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b := &gatedBackend{Backend: memory.New(), acked: make(chan struct{}), resume: make(chan struct{})}
		q, err := New[int](context.Background(), WithBackend(b))
		if err != nil {
			t.Fatal(err)
		}
		c, _ := q.Consume(ctx, func(context.Context, Job[int]) error { return nil }, WithWorkers(1))
		if _, err := q.Enqueue(ctx, 1); err != nil {
			t.Fatal(err)
		}
		<-b.acked // the job is gone from the backend: the caller may see it done
		if s, _ := q.Stats(ctx); s.Ready+s.InFlight+s.Delayed != 0 {
			t.Fatalf("stats %+v: want the job acked in the backend", s)
		}
		closed := make(chan closeResult, 1)
		go func() {
			r, err := c.Close(ctx)
			closed <- closeResult{r, err}
		}()
		synctest.Wait() // Close has started and waits for the worker
		close(b.resume)
		res := <-closed
		if res.err != nil || res.r != (Report{}) {
			t.Errorf("Close = %+v, %v; want an empty report (the job was acked before Close)", res.r, res.err)
		}
	})
}

// A job the consumer cannot settle during the drain (the backend call
// fails) is reported as abandoned: it stays leased in the backend until its
// lease ends.
func TestCloseReportsUnsettledJobAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b := &gatedBackend{Backend: memory.New()}
		q, err := New[int](context.Background(), WithBackend(b))
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan struct{})
		c, _ := q.Consume(ctx, func(ctx context.Context, j Job[int]) error {
			close(started)
			<-ctx.Done()
			return context.Cause(ctx)
		}, WithWorkers(1), WithLease(time.Minute))
		if _, err := q.Enqueue(ctx, 1); err != nil {
			t.Fatal(err)
		}
		<-started
		b.fail = errors.New("broker unreachable") // the worker is blocked in the handler
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		r, err := c.Close(cctx)
		if !errors.Is(err, context.DeadlineExceeded) || r != (Report{Abandoned: 1}) {
			t.Errorf("Close = %+v, %v; want 1 abandoned, deadline exceeded", r, err)
		}
		if s, _ := q.Stats(ctx); s.InFlight != 1 {
			t.Errorf("stats %+v: want the abandoned job leased", s)
		}
		time.Sleep(90 * time.Second) // the backend lease (1.5 leases) ends
		if s, _ := q.Stats(ctx); s.Ready != 1 || s.InFlight != 0 {
			t.Errorf("stats after the lease %+v: want the job ready again", s)
		}
	})
}
