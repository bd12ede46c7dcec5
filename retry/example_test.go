package retry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
)

var errUnavailable = errors.New("service unavailable")

// Configure once, call many times: the Policy is safe for concurrent use.
func ExampleNew() {
	p := retry.New(
		retry.WithMaxAttempts(4),
		retry.WithBackoff(backoff.Exponential(time.Millisecond, 2, 10*time.Millisecond)),
		retry.WithHooks(retry.Hooks{OnRetry: func(_ context.Context, e retry.RetryEvent) {
			fmt.Printf("attempt %d failed (%v), retrying in %v\n", e.Attempt, e.Err, e.Delay)
		}}),
	)
	calls := 0
	err := retry.Do(context.Background(), p, func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return errUnavailable
		}
		return nil
	})
	fmt.Println("err:", err, "calls:", calls)
	// Output:
	// attempt 1 failed (service unavailable), retrying in 1ms
	// attempt 2 failed (service unavailable), retrying in 2ms
	// err: <nil> calls: 3
}

// When it gives up, the error says why, counts the attempts and keeps every attempt's error.
func ExampleDo() {
	p := retry.New(retry.WithMaxAttempts(3), retry.WithBackoff(backoff.Constant(time.Millisecond)))
	err := retry.Do(context.Background(), p, func(ctx context.Context) error {
		return errUnavailable
	})

	var e *retry.Error
	if errors.As(err, &e) {
		fmt.Println(e.Attempts, e.Reason == retry.ErrMaxAttempts)
	}
	fmt.Println(errors.Is(err, retry.ErrExhausted), errors.Is(err, errUnavailable))
	fmt.Println(err)
	// Output:
	// 3 true
	// true true
	// retry: max attempts reached after 3 attempts: service unavailable
}

// DoValue takes the same arguments as Do, in the same order, and returns the value of the
// attempt that succeeded.
func ExampleDoValue() {
	p := retry.New(retry.WithBackoff(backoff.Constant(time.Millisecond)))
	calls := 0
	n, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (int, error) {
		calls++
		if calls == 1 {
			return 0, errUnavailable
		}
		return 42, nil
	})
	fmt.Println(n, err)
	// Output: 42 <nil>
}

// A Permanent error stops the loop at once, whatever the predicate says.
func ExamplePermanent() {
	errBadRequest := errors.New("400 bad request")
	calls := 0
	p := retry.New(retry.WithRetryIf(func(error) bool { return true }))
	err := retry.Do(context.Background(), p, func(ctx context.Context) error {
		calls++
		return retry.Permanent(errBadRequest)
	})

	fmt.Println(calls, errors.Is(err, retry.ErrPermanent), errors.Is(err, errBadRequest))
	fmt.Println(err)
	// Output:
	// 1 true true
	// retry: permanent error after 1 attempt: 400 bad request
}

// A server's Retry-After header replaces the backoff delay (clamped by WithMaxHint).
func ExampleParseRetryAfter() {
	now := time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)
	d, ok := retry.ParseRetryAfter("Wed, 21 Oct 2026 07:28:30 GMT", now)
	fmt.Println(d, ok)
	d, ok = retry.ParseRetryAfter("120", now)
	fmt.Println(d, ok)

	// In an operation: return retry.After(err, d) so that the loop waits d.
	calls := 0
	err := retry.Do(context.Background(), nil, func(ctx context.Context) error {
		calls++
		if calls == 1 {
			d, _ := retry.ParseRetryAfter("0", time.Now())
			return retry.After(errors.New("429 too many requests"), d)
		}
		return nil
	})

	fmt.Println(calls, err)
	// Output:
	// 30s true
	// 2m0s true
	// 2 <nil>
}

// A Budget shared by every call to a dependency stops a retry storm: when the dependency
// fails everywhere, the budget's initial balance and its floor pay for a few retries, and
// then retries are refused at once instead of multiplying the load.
func ExampleWithBudget() {
	// Retries <= 1% of successes + 2 per second. It starts full, with the credit of 1,000
	// successes: 10 retries.
	budget := retry.NewBudget(0.01, 2)
	p := retry.New(retry.WithMaxAttempts(4), retry.WithBackoff(backoff.Constant(0)), retry.WithBudget(budget))

	attempts := 0
	for range 6 {
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			attempts++
			return errUnavailable
		})
		fmt.Println(errors.Is(err, retry.ErrBudgetExhausted), err)
	}
	fmt.Println("attempts:", attempts, "instead of", 6*4)
	// Output:
	// false retry: max attempts reached after 4 attempts: service unavailable
	// false retry: max attempts reached after 4 attempts: service unavailable
	// false retry: max attempts reached after 4 attempts: service unavailable
	// false retry: max attempts reached after 4 attempts: service unavailable
	// true retry: budget exhausted after 1 attempt: service unavailable
	// true retry: budget exhausted after 1 attempt: service unavailable
	// attempts: 18 instead of 24
}

// A job queue that redelivers later asks the policy what to do after each failure.
func ExamplePolicy_Next() {
	p := retry.New(retry.WithMaxAttempts(3), retry.WithBackoff(backoff.Exponential(time.Second, 2, time.Minute)))
	for attempts := 1; ; attempts++ {
		delay, reason := p.Next(attempts, 0, errUnavailable)
		if reason != nil {
			fmt.Println("dead-letter:", reason)
			break
		}
		fmt.Println("redeliver in", delay)
	}
	// Output:
	// redeliver in 1s
	// redeliver in 2s
	// dead-letter: retry: max attempts reached
}

// A budget starts full, with the credit of 1,000 successes; each retry costs one token and
// each success deposits the ratio.
func ExampleNewBudget() {
	b := retry.NewBudget(0.1, 0) // no floor: only the bucket pays
	fmt.Println(b.Balance())
	fmt.Println(b.Withdraw(), b.Balance())
	b.Deposit()
	fmt.Println(b.Balance())
	// Output:
	// 100
	// true 99
	// 99.1
}

// After attaches a server's hint to an error: the next retry waits that long instead of the
// backoff's delay (here 1ms), and never less.
func ExampleAfter() {
	p := retry.New(
		retry.WithBackoff(backoff.Constant(time.Millisecond)),
		retry.WithHooks(retry.Hooks{OnRetry: func(_ context.Context, e retry.RetryEvent) {
			fmt.Println("retrying in", e.Delay)
		}}),
	)
	calls := 0
	err := retry.Do(context.Background(), p, func(ctx context.Context) error {
		if calls++; calls == 1 {
			return retry.After(errors.New("503 slow down"), 20*time.Millisecond)
		}
		return nil
	})
	fmt.Println(calls, err)
	// Output:
	// retrying in 20ms
	// 2 <nil>
}

type requestIDKey struct{}

// OnGiveUp runs exactly once when a call gives up, with the call's own context: a Policy
// shared by every request tells which request gave up.
func ExampleWithHooks() {
	p := retry.New(
		retry.WithMaxAttempts(2),
		retry.WithBackoff(backoff.Constant(0)),
		retry.WithHooks(retry.Hooks{OnGiveUp: func(ctx context.Context, e *retry.Error) {
			fmt.Printf("request %v: dead-lettered: %v\n", ctx.Value(requestIDKey{}), e)
		}}),
	)
	for _, id := range []string{"r1", "r2"} {
		ctx := context.WithValue(context.Background(), requestIDKey{}, id)
		_ = retry.Do(ctx, p, func(ctx context.Context) error {
			if id == "r2" {
				return errUnavailable
			}
			return nil
		})
	}
	// Output:
	// request r2: dead-lettered: retry: max attempts reached after 2 attempts: service unavailable
}

// A RetryEvent logs with one slog call: it is a slog.LogValuer.
func ExampleRetryEvent_LogValue() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // a fixed output for the example
			}
			return a
		},
	}))
	e := retry.RetryEvent{Attempt: 2, Err: errUnavailable, Delay: 200 * time.Millisecond, Duration: 30 * time.Millisecond}
	logger.Info("retrying", "event", e)
	// Output:
	// level=INFO msg=retrying event.attempt=2 event.err="service unavailable" event.delay=200ms event.duration=30ms
}
