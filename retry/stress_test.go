package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
)

// One Policy and one Budget shared by many goroutines, with random failures, permanent
// errors, hints and cancellations: every call ends in exactly one outcome, OnGiveUp runs
// once per failed call, OnRetry once before each sleep, and the attempt counts add up.
func TestChaosAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var retries, gaveUp, hookAttempts atomic.Int64
		b := retry.NewBudget(0.2, 50)
		p := retry.New(
			retry.WithMaxAttempts(5),
			retry.WithMaxElapsed(2*time.Second),
			retry.WithAttemptTimeout(300*ms),
			retry.WithBackoff(backoff.Exponential(10*ms, 2, 500*ms, backoff.WithJitter(backoff.FullJitter))),
			retry.WithBudget(b),
			retry.WithHooks(retry.Hooks{
				OnRetry:  func(context.Context, retry.RetryEvent) { retries.Add(1) },
				OnGiveUp: func(_ context.Context, e *retry.Error) { gaveUp.Add(1); hookAttempts.Add(int64(e.Attempts)) },
			}),
		)
		var attempts, successes, failures, failedAttempts, canceled atomic.Int64
		var wg sync.WaitGroup
		for g := range 40 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for range 50 {
					ctx, cancel := context.WithCancel(t.Context())
					if r.IntN(10) == 0 {
						time.AfterFunc(time.Duration(r.IntN(400))*ms, cancel)
					}
					var mine int64
					err := retry.Do(ctx, p, func(ctx context.Context) error {
						attempts.Add(1)
						mine++
						switch r.IntN(8) {
						case 0, 1, 2:
							return nil
						case 3:
							return retry.Permanent(errA)
						case 4:
							return retry.After(errB, time.Duration(r.IntN(200))*ms)
						case 5:
							<-ctx.Done()
							return ctx.Err()
						}
						return errC
					})

					cancel()
					if err == nil {
						successes.Add(1)
						continue
					}
					failures.Add(1)
					var e *retry.Error
					if !errors.As(err, &e) {
						t.Errorf("not a *retry.Error: %v", err)
						continue
					}
					if int64(e.Attempts) != mine {
						t.Errorf("error reports %d attempts, op ran %d times", e.Attempts, mine)
					}
					if len(e.Errors()) != e.Attempts {
						t.Errorf("%d errors for %d attempts", len(e.Errors()), e.Attempts)
					}
					failedAttempts.Add(int64(e.Attempts))
					if e.Reason == retry.ErrCanceled {
						canceled.Add(1)
					}
				}
			})
		}
		wg.Wait()
		equal(t, int64(2000), successes.Load()+failures.Load())
		equal(t, failures.Load(), gaveUp.Load(), "OnGiveUp once per failed call")
		equal(t, failedAttempts.Load(), hookAttempts.Load())
		// OnRetry runs before each sleep; a call canceled during its sleep has one more
		// OnRetry than retries.
		r := attempts.Load() - 2000
		check(t, retries.Load() >= r && retries.Load() <= r+canceled.Load(),
			"%d OnRetry calls for %d retries and %d cancellations", retries.Load(), r, canceled.Load())
	})
}
