package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
)

var errUnavailable = errors.New("service unavailable")

// Configure once, call many times: the Policy is safe for concurrent use.
func ExamplePolicy_Do() {
	p := retry.New(
		retry.MaxAttempts(4),
		retry.Backoff(backoff.Exponential(time.Millisecond, 2, 10*time.Millisecond)),
		retry.OnRetry(func(attempt int, err error, delay time.Duration) {
			fmt.Printf("attempt %d failed (%v), retrying in %v\n", attempt, err, delay)
		}),
	)
	calls := 0
	err := p.Do(context.Background(), func(ctx context.Context) error {
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
	err := retry.Do(context.Background(), func(ctx context.Context) error {
		return errUnavailable
	}, retry.MaxAttempts(3), retry.Backoff(backoff.Constant(time.Millisecond)))

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

// DoValue returns the value of the attempt that succeeded.
func ExampleDoValue() {
	p := retry.New(retry.Backoff(backoff.Constant(time.Millisecond)))
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
	err := retry.Do(context.Background(), func(ctx context.Context) error {
		calls++
		return retry.Permanent(errBadRequest)
	}, retry.If(func(error) bool { return true }))

	fmt.Println(calls, errors.Is(err, retry.ErrPermanent), errors.Is(err, errBadRequest))
	fmt.Println(err)
	// Output:
	// 1 true true
	// retry: permanent error after 1 attempt: 400 bad request
}

// A server's Retry-After header replaces the backoff delay (clamped by MaxHint).
func ExampleParseRetryAfter() {
	now := time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)
	d, ok := retry.ParseRetryAfter("Wed, 21 Oct 2026 07:28:30 GMT", now)
	fmt.Println(d, ok)
	d, ok = retry.ParseRetryAfter("120", now)
	fmt.Println(d, ok)

	// In an operation: return retry.After(err, d) so that the loop waits d.
	calls := 0
	err := retry.Do(context.Background(), func(ctx context.Context) error {
		calls++
		if calls == 1 {
			d, _ := retry.ParseRetryAfter("0", time.Now())
			return retry.After(errors.New("429 too many requests"), d)
		}
		return nil
	}, retry.MaxHint(time.Minute))
	fmt.Println(calls, err)
	// Output:
	// 30s true
	// 2m0s true
	// 2 <nil>
}

// A Budget shared by every call to a dependency stops a retry storm: when the dependency
// fails everywhere, retries are refused at once instead of multiplying the load.
func ExampleNewBudget() {
	budget := retry.NewBudget(0.1, 2) // retries <= 10% of successes + 2 per second
	p := retry.New(retry.MaxAttempts(4), retry.Backoff(backoff.Constant(0)), retry.WithBudget(budget))

	attempts := 0
	for range 5 {
		err := p.Do(context.Background(), func(ctx context.Context) error {
			attempts++
			return errUnavailable
		})
		fmt.Println(errors.Is(err, retry.ErrBudgetExhausted), err)
	}
	fmt.Println("attempts:", attempts, "instead of", 5*4)
	// Output:
	// true retry: budget exhausted after 3 attempts: service unavailable
	// true retry: budget exhausted after 1 attempt: service unavailable
	// true retry: budget exhausted after 1 attempt: service unavailable
	// true retry: budget exhausted after 1 attempt: service unavailable
	// true retry: budget exhausted after 1 attempt: service unavailable
	// attempts: 7 instead of 20
}

// A job queue that redelivers later asks the policy what to do after each failure.
func ExamplePolicy_Next() {
	p := retry.New(retry.MaxAttempts(3), retry.Backoff(backoff.Exponential(time.Second, 2, time.Minute)))
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
