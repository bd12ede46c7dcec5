package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
)

var budget = retry.NewBudget(0.1, 10) // retries <= 10% of successes, plus 10/s

var policy = retry.New(
	retry.WithMaxAttempts(4), retry.WithMaxElapsed(30*time.Second), retry.WithAttemptTimeout(2*time.Second),
	retry.WithBackoff(backoff.Exponential(50*time.Millisecond, 2, 5*time.Second, backoff.WithJitter(backoff.FullJitter))),
	retry.WithBudget(budget),
)

// The README's retry snippet, as written there, with stubs for what it calls.
func TestREADMESnippet(t *testing.T) {
	ctx := context.Background()
	url := "http://example.invalid/"
	calls := 0
	get := func(context.Context, string) ([]byte, error) {
		if calls++; calls == 1 {
			return nil, retry.After(errors.New("503"), time.Millisecond)
		}
		return []byte("ok"), nil
	}
	ping := func(context.Context) error { return nil }
	// The snippet's budget is the package's, shared by every run of this
	// test: one retry withdraws a token and the snippet's two successes
	// deposit 0.2, so that -count=200 would spend the bucket's 100. Eight
	// more successes make a run pay for its retry.
	for range 8 {
		equal(t, nil, retry.Do(ctx, policy, ping))
	}

	body, err := retry.DoValue(ctx, policy, func(ctx context.Context) ([]byte, error) {
		return get(ctx, url) // return retry.Permanent(err) for a 4xx, retry.After(err, d) for Retry-After
	})
	// errors.Is(err, retry.ErrBudgetExhausted), retry.ErrMaxAttempts, ...; every attempt's error is kept
	equal(t, nil, err)
	equal(t, "ok", string(body))
	err = retry.Do(ctx, policy, func(ctx context.Context) error { return ping(ctx) }) // nil policy: defaults
	equal(t, nil, err)
	equal(t, nil, retry.Do(ctx, nil, ping), "a nil policy")
}
