package retry_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/retry"
)

func withdrawAll(b *retry.Budget) int {
	n := 0
	for b.Withdraw() {
		n++
	}
	return n
}

func TestBudgetFloorInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retry.NewBudget(0.1, 10)
		equal(t, 10, withdrawAll(b), "a burst of one second's worth at start")
		time.Sleep(100 * ms)
		equal(t, 1, withdrawAll(b), "then one per 100ms")
		time.Sleep(250 * ms)
		equal(t, 2, withdrawAll(b))
		time.Sleep(50 * ms) // carries the remaining 50ms
		equal(t, 1, withdrawAll(b))
		time.Sleep(10 * time.Second)
		equal(t, 10, withdrawAll(b), "an idle period refills the burst, no more")
	})
}

func TestBudgetSlowFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retry.NewBudget(0, 0.5)
		equal(t, 1, withdrawAll(b))
		time.Sleep(1999 * ms)
		equal(t, 0, withdrawAll(b))
		time.Sleep(ms)
		equal(t, 1, withdrawAll(b))
	})
}

func TestBudgetTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retry.NewBudget(0.25, 0)
		equal(t, 0.0, b.Balance(), "starts empty")
		equal(t, 0, withdrawAll(b), "no floor")
		for range 10 {
			b.Deposit()
		}
		equal(t, 2.5, b.Balance())
		equal(t, 2, withdrawAll(b), "whole tokens only")
		equal(t, 0.5, b.Balance())
		for range 10_000 {
			b.Deposit()
		}
		equal(t, 250.0, b.Balance(), "capped at the credit of 1,000 successes")

		var zero retry.Budget
		zero.Deposit()
		check(t, !zero.Withdraw(), "the zero Budget allows no retries")
		off := retry.NewBudget(0, 0)
		off.Deposit()
		check(t, !off.Withdraw(), "NewBudget(0, 0) allows no retries")
	})
}

func TestBudgetTokensBeforeFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retry.NewBudget(1, 10)
		for range 5 {
			b.Deposit()
		}
		equal(t, 15, withdrawAll(b), "5 tokens, then the floor's 10")
	})
}

func TestBudgetPanics(t *testing.T) {
	panicsWith(t, "retry: budget ratio must be in [0, 1000], got -0.1", func() { retry.NewBudget(-0.1, 1) })
	panicsWith(t, "retry: budget ratio must be in [0, 1000], got NaN", func() { retry.NewBudget(math.NaN(), 1) })
	panicsWith(t, "retry: budget floor must be a finite number >= 0, got -1", func() { retry.NewBudget(0.1, -1) })
	panicsWith(t, "retry: budget floor must be a finite number >= 0, got +Inf", func() { retry.NewBudget(0.1, math.Inf(1)) })
}

// Concurrent deposits and withdrawals never lose or invent tokens.
func TestBudgetConcurrentAccounting(t *testing.T) {
	b := retry.NewBudget(1, 0)
	const goroutines, each = 8, 2000
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				b.Deposit()
				if b.Withdraw() {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	equal(t, float64(goroutines*each), float64(granted.Load())+b.Balance())
}

// The storm: 1,000 concurrent calls against an operation that always fails, 4 attempts each.
// Without a budget that is 4,000 attempts. With a budget (ratio 0.1, floor 10/s) and no
// successes, the bucket never fills, so retries are bounded by the floor alone: at most
// 10 (burst) + 10/s × elapsed. The run is in virtual time, so elapsed is exact.
func TestRetryStorm(t *testing.T) {
	const calls, attempts = 1000, 4
	storm := func(t *testing.T, opts ...retry.Option) (total int64, reasons map[error]int, elapsed time.Duration) {
		var n atomic.Int64
		var mu sync.Mutex
		reasons = map[error]int{}
		start := time.Now()
		p := retry.New(append([]retry.Option{retry.MaxAttempts(attempts), noJitter(100 * ms)}, opts...)...)
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				err := p.Do(t.Context(), func(context.Context) error { n.Add(1); return errA })
				var e *retry.Error
				if !errors.As(err, &e) {
					t.Errorf("not a *retry.Error: %v", err)
					return
				}
				mu.Lock()
				reasons[e.Reason]++
				mu.Unlock()
			})
		}
		wg.Wait()
		return n.Load(), reasons, time.Since(start)
	}
	t.Run("without budget", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			total, reasons, elapsed := storm(t)
			equal(t, int64(calls*attempts), total)
			equal(t, map[error]int{retry.ErrMaxAttempts: calls}, reasons)
			equal(t, 300*ms, elapsed)
		})
	})
	t.Run("with budget", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const ratio, floor = 0.1, 10.0
			const interval = time.Duration(float64(time.Second) / floor)
			b := retry.NewBudget(ratio, floor)
			total, reasons, elapsed := storm(t, retry.WithBudget(b))
			// Every call fails, so no success ever puts a retry in the bucket: only the floor
			// pays for retries.
			bound := calls + // first attempts are never refused
				int64(floor) + int64(elapsed/interval) // the floor: burst + rate × time
			t.Logf("attempts with budget: %d (bound %d, elapsed %v); without: %d", total, bound, elapsed, calls*attempts)
			check(t, total <= bound, "%d attempts, budget promises <= %d", total, bound)
			check(t, total >= calls+int64(floor), "%d attempts: the floor's burst was not used", total)
			equal(t, calls, reasons[retry.ErrBudgetExhausted]+reasons[retry.ErrMaxAttempts])
			check(t, reasons[retry.ErrBudgetExhausted] >= calls-int(floor)-1, "refused %d calls", reasons[retry.ErrBudgetExhausted])
		})
	})
}

// With a mix of successes and failures, retries stay within ratio × successes plus the floor.
func TestBudgetBoundsRetriesUnderPartialFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ratio, floor = 0.1, 10.0
		const interval = time.Duration(float64(time.Second) / floor)
		b := retry.NewBudget(ratio, floor)
		p := retry.New(retry.MaxAttempts(4), noJitter(10*ms), retry.WithBudget(b))
		var attempts, retries, successes atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for g := range 50 {
			wg.Go(func() {
				for i := range 200 {
					fail := (g*200+i)%2 == 0 // half the calls always fail
					first := true
					err := p.Do(t.Context(), func(context.Context) error {
						attempts.Add(1)
						if !first {
							retries.Add(1)
						}
						first = false
						if fail {
							return errA
						}
						return nil
					})
					if err == nil {
						successes.Add(1)
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		bound := int64(ratio*float64(successes.Load())) + int64(floor) + int64(elapsed/interval)
		t.Logf("calls 10000, successes %d, retries %d (bound %d), elapsed %v", successes.Load(), retries.Load(), bound, elapsed)
		equal(t, int64(5000), successes.Load())
		check(t, retries.Load() <= bound, "%d retries, budget promises <= %d", retries.Load(), bound)
		check(t, retries.Load() < 5000*3/5, "budget made no difference")
	})
}

func TestEmptyBudgetNeverBlocksFirstAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.New(retry.WithBudget(retry.NewBudget(0, 0)), noJitter(0), retry.MaxAttempts(5))
		for range 100 {
			calls := 0
			err := p.Do(t.Context(), func(context.Context) error { calls++; return errA })
			equal(t, 1, calls)
			e := asError(t, err)
			equal(t, retry.ErrBudgetExhausted, e.Reason)
			equal(t, "retry: budget exhausted after 1 attempt: a", e.Error())
			equal(t, nil, p.Do(t.Context(), func(context.Context) error { return nil }))
		}
	})
}
