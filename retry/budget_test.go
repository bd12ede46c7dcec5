package retry_test

import (
	"context"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
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
		b := retry.NewBudget(0, 10)
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
		equal(t, 250.0, b.Balance(), "starts full: the credit of 1,000 successes")
		equal(t, 250, withdrawAll(b), "whole tokens, then no floor")
		equal(t, 0.0, b.Balance())
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
		equal(t, 1010, withdrawAll(b), "1,000 tokens, then the floor's 10")
		for range 5 {
			b.Deposit()
		}
		equal(t, 5, withdrawAll(b), "5 tokens; the floor has nothing more in the same instant")
		time.Sleep(100 * ms)
		b.Deposit()
		equal(t, 2, withdrawAll(b), "the token, then the floor's one per 100ms")
	})
}

func TestBudgetPanics(t *testing.T) {
	panicsWith(t, "retry: NewBudget(-0.1, 1): ratio must be in [0, 1000]", func() { retry.NewBudget(-0.1, 1) })
	panicsWith(t, "retry: NewBudget(NaN, 1): ratio must be in [0, 1000]", func() { retry.NewBudget(math.NaN(), 1) })
	panicsWith(t, "retry: NewBudget(0.1, -1): floor must be a finite number >= 0", func() { retry.NewBudget(0.1, -1) })
	panicsWith(t, "retry: NewBudget(0.1, +Inf): floor must be a finite number >= 0", func() { retry.NewBudget(0.1, math.Inf(1)) })
}

// Concurrent deposits and withdrawals never lose or invent tokens.
func TestBudgetConcurrentAccounting(t *testing.T) {
	b := retry.NewBudget(1, 0)
	equal(t, 1000, withdrawAll(b), "the initial balance") // so that no deposit meets the cap
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
		p := retry.New(append([]retry.Option{retry.WithMaxAttempts(attempts), noJitter(100 * ms)}, opts...)...)
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				err := retry.Do(t.Context(), p, func(context.Context) error { n.Add(1); return errA })
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
			b := retry.NewBudget(ratio, floor)
			total, reasons, elapsed := storm(t, retry.WithBudget(b))
			// Every call fails, so no success adds to the bucket: the initial balance (the
			// credit of 1,000 successes, 100 retries) and the floor pay for every retry.
			bound := calls + // first attempts are never refused
				1000*ratio + // the bucket's initial balance
				floorBound(floor, elapsed) // the floor: floor(max(1, 10) + 10/s × elapsed)
			t.Logf("attempts with budget: %d (bound %d, elapsed %v); without: %d", total, bound, elapsed, calls*attempts)
			check(t, total <= bound, "%d attempts, budget promises <= %d", total, bound)
			// Exactly: at 0, 110 retries (100 tokens, the floor's burst of 10), 890 calls
			// refused; at 100ms, 1 of the 110 (the floor's next), 109 refused; at 200ms the
			// last one's third retry; at 300ms its fourth attempt fails.
			equal(t, 300*ms, elapsed)
			equal(t, int64(calls+110+1+1), total)
			equal(t, map[error]int{retry.ErrBudgetExhausted: 999, retry.ErrMaxAttempts: 1}, reasons)
		})
	})
}

// With a mix of successes and failures, retries stay within ratio × successes plus the floor.
func TestBudgetBoundsRetriesUnderPartialFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ratio, floor = 0.1, 10.0 // ratio × (1000 + successes) is (1000 + successes)/10
		b := retry.NewBudget(ratio, floor)
		p := retry.New(retry.WithMaxAttempts(4), noJitter(10*ms), retry.WithBudget(b))
		var attempts, retries, successes atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for g := range 50 {
			wg.Go(func() {
				for i := range 200 {
					fail := (g*200+i)%2 == 0 // half the calls always fail
					first := true
					err := retry.Do(t.Context(), p, func(context.Context) error {
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
		// The bucket: its initial balance plus every success's deposit; and the floor.
		bound := (1000+successes.Load())/10 + floorBound(floor, elapsed)
		t.Logf("calls 10000, successes %d, retries %d (bound %d), elapsed %v", successes.Load(), retries.Load(), bound, elapsed)
		equal(t, int64(5000), successes.Load())
		check(t, retries.Load() <= bound, "%d retries, budget promises <= %d", retries.Load(), bound)
		check(t, retries.Load() < 5000*3/5, "budget made no difference")
	})
}

func TestEmptyBudgetNeverBlocksFirstAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.New(retry.WithBudget(retry.NewBudget(0, 0)), noJitter(0), retry.WithMaxAttempts(5))
		for range 100 {
			calls := 0
			err := retry.Do(t.Context(), p, func(context.Context) error { calls++; return errA })
			equal(t, 1, calls)
			e := asError(t, err)
			equal(t, retry.ErrBudgetExhausted, e.Reason)
			equal(t, "retry: budget exhausted after 1 attempt: a", e.Error())
			equal(t, nil, retry.Do(t.Context(), p, func(context.Context) error { return nil }))
		}
	})
}

// floorBound is the floor's documented bound, computed exactly: the retries a floor of m per
// second grants at most over a period of length d from a fresh Budget, floor(max(1, m) + m×d).
func floorBound(m float64, d time.Duration) int64 {
	r := new(big.Rat).SetFloat64(m)
	x := new(big.Rat).Mul(r, new(big.Rat).SetFrac64(int64(d), int64(time.Second)))
	x.Add(x, new(big.Rat).SetFloat64(max(1, m)))
	return new(big.Int).Quo(x.Num(), x.Denom()).Int64()
}

// Regression (issue 14, item 15): the floor's interval was 1s/minPerSecond truncated to whole
// nanoseconds, so from 1.5e9 per second it was 0, which meant "no floor" and refused the
// first retry. Every finite rate admits a first retry, again a nanosecond later, and again
// after a century.
func TestBudgetFloorAdmitsAtEveryRate(t *testing.T) {
	for _, m := range []float64{1e9, 1e9 + 0.5, 1.5e9, 2e9, 1e12, 1e15, 1e18, 1 << 63, 1.8e19, 1 << 64, 1e20, math.MaxFloat64} {
		synctest.Test(t, func(t *testing.T) {
			b := retry.NewBudget(0, m)
			check(t, b.Withdraw(), "%g/s: first retry refused", m)
			check(t, b.Withdraw(), "%g/s: second retry refused", m)
			time.Sleep(time.Nanosecond)
			check(t, b.Withdraw(), "%g/s: refused after 1ns", m)
			time.Sleep(100 * 365 * 24 * time.Hour)
			check(t, b.Withdraw(), "%g/s: refused after a century", m)
		})
	}
}

// Regression (issue 14, item 15): a truncated interval raised the rate: 49,997.75 per second
// granted 550,000 retries over 10 s against a bound of 549,975, and 300,000.5 per second had
// a burst of 300,030. A saturated floor grants exactly its bound, floor(max(1, m) + m×t) by
// time t, at every rate, whatever the steps at which it is asked; and over any period that
// does not start at NewBudget at most one more than floor(max(1, m) + m×length).
func TestBudgetFloorIsExact(t *testing.T) {
	cases := []struct {
		m    float64
		span time.Duration
		step time.Duration // the longest pause between two drains
	}{
		{0.5, 20 * time.Second, 300 * ms},
		{1.0 / 3, 20 * time.Second, 300 * ms},
		{1, 10 * time.Second, 100 * ms},
		{3, 10 * time.Second, 100 * ms},
		{7, 10 * time.Second, 50 * ms},
		{10, 10 * time.Second, 50 * ms},
		{49_997.75, 10 * time.Second, 20 * ms},
		{300_000.5, time.Second, 10 * ms},
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.m*4), 7))
			b := retry.NewBudget(0, c.m)
			start := time.Now()
			equal(t, floorBound(c.m, 0), int64(withdrawAll(b)), "%g/s: the burst", c.m)
			type drain struct {
				at    time.Duration
				total int64 // granted up to and including this drain
			}
			log := []drain{{0, floorBound(c.m, 0)}}
			for time.Since(start) < c.span {
				time.Sleep(1 + time.Duration(rng.Int64N(int64(c.step))))
				at := time.Since(start)
				total := log[len(log)-1].total + int64(withdrawAll(b))
				// Saturated at every step: exactly the bound, never more, never less.
				equal(t, floorBound(c.m, at), total, "%g/s: granted by %v", c.m, at)
				log = append(log, drain{at, total})
			}
			for range 2000 {
				i := rng.IntN(len(log) - 1)
				j := i + 1 + rng.IntN(len(log)-1-i)
				got := log[j].total - log[i].total // the drains after i, up to j
				limit := floorBound(c.m, log[j].at-log[i].at) + 1
				check(t, got <= limit, "%g/s: %d granted in (%v, %v], want <= %d", c.m, got, log[i].at, log[j].at, limit)
			}
		})
	}
}

// The floor's count is exact in integers at rates and times where float64 or int64
// arithmetic would round or overflow: it equals floor(max(1, m) + m×t) computed with
// rationals, up to the longest time a time.Duration holds.
func TestBudgetFloorLimitIsExactArithmetic(t *testing.T) {
	rates := []float64{math.SmallestNonzeroFloat64, 1e-300, 1e-9, 1.0 / 3, 0.5, math.Nextafter(1, 0), 1, 1.0 + 1.0/3,
		10, 49_997.75, 300_000.5, 1e9 - 0.25, 1e9, 1.5e9, 2e9, math.Pi * 1e11, 1e15, 1 << 53, 1<<53 + 2, 1e18,
		1 << 63, math.Nextafter(1<<64, 0)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		rates = append(rates, math.Exp(rng.Float64()*88-44)) // 1e-19 to 1e19
	}
	times := []time.Duration{0, 1, 2, time.Second - 1, time.Second, time.Second + 1, 3 * time.Second,
		24 * time.Hour, 365 * 24 * time.Hour, math.MaxInt64 / 2, math.MaxInt64 - 1e9, math.MaxInt64}
	for range 20 {
		times = append(times, time.Duration(rng.Int64()))
	}
	for _, m := range rates {
		b := retry.NewBudget(0, m)
		for _, d := range times {
			want := new(big.Rat).Mul(new(big.Rat).SetFloat64(m), new(big.Rat).SetFrac64(int64(d), int64(time.Second)))
			want.Add(want, new(big.Rat).SetFloat64(max(1, m)))
			w := new(big.Int).Quo(want.Num(), want.Denom())
			if got := retry.FloorLimit(b, d); got.Cmp(w) != 0 {
				t.Fatalf("%g/s at %v: limit %v, want %v", m, d, got, w)
			}
		}
	}
}

// Goroutines racing for the floor get exactly its bound between them: no slot is lost or
// granted twice by the compare-and-swap.
func TestBudgetFloorConcurrentAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const m = 1000.5
		b := retry.NewBudget(0, m)
		start := time.Now()
		var granted atomic.Int64
		race := func() {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 400 {
						if b.Withdraw() {
							granted.Add(1)
						}
					}
				})
			}
			wg.Wait()
		}
		race()
		equal(t, floorBound(m, 0), granted.Load(), "the burst")
		time.Sleep(500 * ms) // less than the burst's second: the floor stays saturated
		race()
		equal(t, floorBound(m, time.Since(start)), granted.Load(), "after 0.5s")
	})
}

// Regression (issue 14, item 16): tokens were counted in millionths, rounded, so three
// successes at ratio 1/3 left 0.999999 and refused the next retry, and a ratio below 5e-7
// deposited nothing. Every ratio with at most nine decimals, and every 1/n for n up to 10,
// is counted exactly: n successes at 1/n pay for exactly one retry.
func TestBudgetTokensCountExactly(t *testing.T) {
	cases := []struct {
		ratio     float64
		successes int
		retries   int // what the successes pay for, exactly
	}{
		{1.0 / 3, 3, 1}, {1.0 / 3, 30, 10}, {2.0 / 3, 3, 2}, {1.0 / 6, 6, 1}, {1.0 / 7, 7, 1},
		{1.0 / 7, 700, 100}, {1.0 / 9, 9, 1}, {0.1, 10, 1}, {0.2, 5, 1}, {0.3, 10, 3},
		{0.7, 10, 7}, {0.25, 4, 1}, {1, 1, 1}, {7.5, 2, 15}, {1000, 1, 1000},
	}
	for _, c := range cases {
		b := retry.NewBudget(c.ratio, 0)
		withdrawAll(b)        // whatever the bucket starts with
		before := b.Balance() // what is left of the initial balance: below one token
		for range c.successes {
			b.Deposit()
		}
		equal(t, c.retries, withdrawAll(b), "ratio %v: retries paid by %d successes", c.ratio, c.successes)
		equal(t, before, b.Balance(), "ratio %v: nothing lost or gained", c.ratio)
	}
	// Tiny ratios count too: the bucket's capacity, the credit of 1,000 successes, is
	// exactly a millionth of a token at 1e-9.
	for _, c := range []struct{ ratio, full float64 }{{1e-9, 1e-6}, {2.5e-7, 2.5e-4}, {1e-6, 1e-3}, {0.123456789, 123.456789}, {1.0 / 3, 1000.0 / 3}} {
		b := retry.NewBudget(c.ratio, 0)
		for range 1000 {
			b.Deposit()
		}
		equal(t, c.full, b.Balance(), "ratio %v", c.ratio)
	}
	// Below half a unit, 1/5,040,000,000,000 of a token, a deposit rounds to nothing.
	for _, c := range []struct {
		ratio    float64
		deposits bool
	}{{1.98e-13, false}, {1.99e-13, true}} {
		b := retry.NewBudget(c.ratio, 0)
		for range 1000 {
			b.Deposit()
		}
		equal(t, c.deposits, b.Balance() > 0, "ratio %v", c.ratio)
	}
}

// newService runs the first 100 calls of a new service against a flaky dependency, one call
// every 18ms (1.8 s in all, in virtual time): each attempt fails with probability 0.3 (a
// seeded sequence), 4 attempts, 10ms apart, budget ratio 0.1 with a floor of 10/s. It
// reports how many calls gave up with ErrBudgetExhausted and how many retries ran.
func newService(t *testing.T, b *retry.Budget) (exhausted, retries int) {
	p := retry.New(retry.WithMaxAttempts(4), noJitter(10*ms), retry.WithBudget(b))
	rng := rand.New(rand.NewPCG(42, 0))
	start := time.Now()
	for i := range 100 {
		time.Sleep(time.Until(start.Add(time.Duration(i) * 18 * ms)))
		attempts := 0
		err := retry.Do(t.Context(), p, func(context.Context) error {
			attempts++
			if rng.Float64() < 0.3 {
				return errA
			}
			return nil
		})

		retries += attempts - 1
		if errors.Is(err, retry.ErrBudgetExhausted) {
			exhausted++
		}
	}
	return exhausted, retries
}

// Regression (issue 14, item 18): a fresh Budget started empty, so a new service's first
// calls against a flaky dependency gave up with ErrBudgetExhausted while the floor and a
// few successes filled it. It starts full, as gRPC's retry throttle does: the same calls
// then run every retry they need (39), as without a budget.
func TestNewBudgetStartsFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retry.NewBudget(0.1, 10)
		equal(t, 100.0, b.Balance(), "the credit of 1,000 successes")
		exhausted, retries := newService(t, b)
		equal(t, 0, exhausted, "calls refused by a budget that starts full")
		equal(t, 39, retries)
	})
	synctest.Test(t, func(t *testing.T) {
		exhausted, retries := newService(t, nil)
		equal(t, 0, exhausted)
		equal(t, 39, retries, "without a budget")
	})
	synctest.Test(t, func(t *testing.T) {
		// What starting empty cost: 4 of the first 100 calls gave up (issue 14 saw 5).
		b := retry.NewBudget(0.1, 10)
		for b.Balance() >= 1 {
			b.Withdraw() // takes whole tokens only; the floor is untouched
		}
		exhausted, retries := newService(t, b)
		equal(t, 4, exhausted, "calls refused by a budget that starts empty")
		equal(t, 36, retries)
	})
}

// Deposits and token withdrawals allocate nothing; a retry that the floor pays for
// allocates its new count (the floor's state is swapped by pointer), and a refusal nothing.
func TestBudgetAllocations(t *testing.T) {
	tokens := retry.NewBudget(1, 0)
	equal(t, 0.0, testing.AllocsPerRun(500, func() { tokens.Deposit(); tokens.Withdraw() }), "tokens")
	floor := retry.NewBudget(0, 1e9)
	equal(t, 1.0, testing.AllocsPerRun(500, func() { floor.Withdraw() }), "floor")
	none := retry.NewBudget(0, 0)
	equal(t, 0.0, testing.AllocsPerRun(500, func() { none.Withdraw() }), "no floor")
	spent := retry.NewBudget(0, 0.001) // one retry now, the next in 1,000 s
	check(t, spent.Withdraw(), "the burst")
	equal(t, 0.0, testing.AllocsPerRun(500, func() { spent.Withdraw() }), "refused by the floor")
}
