// Command tour is a short guided run through every corral package: scope, pool,
// backoff, retry and queue. Each step prints what it demonstrates.
//
//	go run ./examples/tour
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
	"github.com/corral-go/corral/scope"
)

func main() {
	if err := tour(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

func tour(ctx context.Context, w io.Writer) error {
	for _, step := range []func(context.Context, io.Writer) error{
		scopeStep, poolStep, backoffStep, retryStep, queueStep,
	} {
		if err := step(ctx, w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}

// scopeStep: a failing task cancels its siblings, with a cause that names it,
// and Run returns only after every task has returned.
func scopeStep(ctx context.Context, w io.Writer) error {
	fmt.Fprintln(w, "== scope: tasks cannot outlive their owner")
	errDown := errors.New("inventory service down")
	var siblingCause error
	err := scope.Run(ctx, func(s *scope.Scope) error {
		pricingStarted := make(chan struct{})
		s.GoNamed("pricing", func(ctx context.Context) error {
			close(pricingStarted)
			<-ctx.Done() // a slow sibling: cancelled, not leaked
			siblingCause = context.Cause(ctx)
			return ctx.Err() // an echo of the cancellation, not reported as a failure
		})
		s.GoNamed("inventory", func(ctx context.Context) error {
			<-pricingStarted
			return errDown
		})
		return nil
	})
	fmt.Fprintf(w, "Run returned: %v\n", err)
	fmt.Fprintf(w, "pricing was cancelled because: %v\n", siblingCause)
	fmt.Fprintf(w, "errors.Is(err, errDown) = %t\n", errors.Is(err, errDown))
	if !errors.Is(err, errDown) {
		return fmt.Errorf("scope step: got %v", err)
	}
	return nil
}

// poolStep: a bounded pool with a bounded queue says "full" instead of growing.
func poolStep(ctx context.Context, w io.Writer) error {
	fmt.Fprintln(w, "== pool: 2 workers, a queue of 2, Reject when full")
	p := pool.New(2, 2, pool.WithOverflow(pool.Reject))
	release := make(chan struct{})
	accepted, full := 0, 0
	for range 6 {
		err := p.Submit(ctx, func(ctx context.Context) error {
			<-release
			return nil
		})
		switch {
		case err == nil:
			accepted++
		case errors.Is(err, pool.ErrFull):
			full++
		default:
			return err
		}
	}
	fmt.Fprintf(w, "submitted 6 blocking tasks: %d accepted, %d rejected with %q\n", accepted, full, pool.ErrFull)
	close(release)
	if err := p.Close(ctx); err != nil {
		return err
	}
	st := p.Stats()
	fmt.Fprintf(w, "after Close: completed=%d rejected=%d workers=%d\n", st.Completed, st.Rejected, st.Workers)
	return nil
}

// backoffStep: policies are immutable values that can list their schedule.
func backoffStep(_ context.Context, w io.Writer) error {
	fmt.Fprintln(w, "== backoff: exponential, base 100ms, factor 2, cap 1s")
	p := backoff.Exponential(100*time.Millisecond, 2, time.Second)
	fmt.Fprintf(w, "first 6 delays: %v\n", p.Delays(6))
	fmt.Fprintf(w, "attempt 10,000: %v (no overflow)\n", p.Delay(10_000, 0))
	return nil
}

// retryStep: bounded retries that say why they stopped.
func retryStep(ctx context.Context, w io.Writer) error {
	fmt.Fprintln(w, "== retry: bounded, classified, and honest about why it gave up")
	p := retry.New(retry.WithMaxAttempts(4), retry.WithBackoff(backoff.Constant(time.Millisecond)))

	calls := 0
	err := retry.Do(ctx, p, func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("flaky")
		}
		return nil
	})

	fmt.Fprintf(w, "flaky operation: err=%v after %d calls\n", err, calls)

	calls = 0
	errBadRequest := errors.New("400 bad request")
	err = retry.Do(ctx, p, func(ctx context.Context) error {
		calls++
		return retry.Permanent(errBadRequest)
	})

	fmt.Fprintf(w, "permanent failure: stopped after %d call; errors.Is(err, retry.ErrPermanent) = %t\n",
		calls, errors.Is(err, retry.ErrPermanent))
	return nil
}

// queueStep: jobs are acked, retried with backoff, or dead-lettered with a
// reason; nothing disappears.
func queueStep(ctx context.Context, w io.Writer) error {
	fmt.Fprintln(w, "== queue: ack, retry, dead letters")
	const jobs = 5
	q, err := queue.New[string](ctx, queue.WithCapacity(100))
	if err != nil {
		return err
	}
	defer q.Close(ctx) // closes its consumer and its backend
	for i := range jobs - 1 {
		if _, err := q.Enqueue(ctx, fmt.Sprintf("email #%d", i+1)); err != nil {
			return err
		}
	}
	if _, err := q.Enqueue(ctx, "poison", queue.WithID("poison-1")); err != nil {
		return err
	}
	c, err := q.Consume(ctx, func(ctx context.Context, job queue.Job[string]) error {
		if job.Payload == "poison" {
			return fmt.Errorf("cannot parse %q", job.Payload)
		}
		return nil
	}, queue.WithWorkers(2), queue.WithMaxAttempts(3), queue.WithBackoff(backoff.Constant(time.Millisecond)))
	if err != nil {
		return err
	}
	// Drain handles every job, the retries included, then closes the consumer.
	if _, err := c.Drain(ctx); err != nil {
		return err
	}
	st, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "enqueued=%d acked=%d retried=%d dead=%d\n", st.Enqueued, st.Acked, st.Retried, st.Dead)
	for dl, err := range q.DeadLetters(ctx) {
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "dead letter %s: reason=%s after %d attempts, last error %q\n",
			dl.Job.ID, dl.Reason, dl.Job.Attempt, dl.History[len(dl.History)-1].Error)
	}
	return nil
}
