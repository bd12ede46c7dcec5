package retry

import (
	"math"
	"strconv"
	"sync/atomic"

	"github.com/corral-go/corral/internal/clock"
)

// Budget is a retry budget shared by any number of calls and goroutines, so that retries
// cannot multiply the load on a failing dependency (a retry storm). It combines a token
// bucket (gRPC and AWS style) with a minimum rate (Finagle style):
//
//   - each successful call deposits ratio tokens; each retry withdraws one whole token;
//     so in steady state retries are at most ratio × successes;
//   - when the bucket holds less than one token, retries are still allowed at minPerSecond
//     per second, with a burst of max(1, minPerSecond) (one second's worth, and at least
//     one), so that a client whose bucket is spent can still retry at all;
//   - otherwise the retry is refused and the call gives up at once with ErrBudgetExhausted.
//
// First attempts never consult the budget. The bucket holds at most the credit of 1,000
// successes (1000×ratio tokens), so a long healthy period cannot bank an unbounded burst,
// and it starts full, as gRPC's retry throttle does (see [NewBudget] for why). Over any
// period of length T, the retries granted number at most
//
//	floor(ratio × (1000 + S)) + floor(max(1, minPerSecond) + minPerSecond × T)
//
// where S is the number of successes in the period: the bucket pays for what it held when
// the period began (at most the credit of 1,000 successes) and the period's deposits, the
// floor for the rest. For a period that does not begin at NewBudget the floor's share may
// be one more. The floor counts whole retries exactly at every finite rate, with no
// interval that rounds: asked until it refuses at least once a second, it has granted
// exactly floor(max(1, minPerSecond) + minPerSecond×T) by time T after NewBudget. A floor
// of 2^64 per second or more, whose burst alone is more retries than a uint64 counts,
// admits every retry.
//
// A Budget is safe for concurrent use and lock-free (atomic compare-and-swap only); a retry
// that the floor pays for allocates a few bytes. Its clock is time.Now, so it follows
// testing/synctest's virtual time when created inside a bubble. Use [WithBudget] to attach
// it to policies. The zero Budget is ready to use and allows no retries: it behaves as
// NewBudget(0, 0), a bucket that holds nothing, with no floor.
type Budget struct {
	tokens   atomic.Int64 // balance in 1/tokenScale tokens, in [0, capacity]
	floor    minRate      // the minimum rate; its own state is atomic
	deposit  int64        // ratio in 1/tokenScale tokens; immutable
	capacity int64        // immutable
	epoch    clock.Epoch  // the floor's time 0; immutable
}

// tokenScale is the number of units in a token: 2520 (the least common multiple of 1 to
// 10) times 10^9, so that a ratio with at most nine decimals, or 1/n for n up to 10, is a
// whole number of units and n deposits of 1/n make exactly one token. The capacity, at most
// 1000 × 1000 tokens, is 2.52e18 units: it fits an int64 with room for one more deposit.
const tokenScale = 2520 * 1_000_000_000

// NewBudget returns a budget where each success deposits ratio tokens, each retry costs one,
// and at least minPerSecond retries per second are allowed regardless of the balance.
// Typical values are 0.1 to 0.2 and 10. It panics if either is negative, NaN or infinite,
// or if ratio is above 1000.
//
// Tokens are counted exactly, in whole units of 1/2,520,000,000,000 of a token, and ratio
// is rounded to the nearest unit once, here: it is exact if it has at most nine decimals
// or is 1/n for n up to 10 (three successes at 1/3 pay for exactly one retry), and a ratio
// below half a unit (about 1.98e-13) deposits nothing. The bounds on [Budget] hold for the
// rounded ratio. As the bucket holds the credit of 1,000 successes, a ratio below 0.001
// never banks a whole token: such a budget retries on its floor alone.
//
// The bucket starts full, with the credit of 1,000 successes, as gRPC's retry throttle
// starts with its maximum tokens: a new process is treated like one that has been healthy,
// so that its first calls against a flaky dependency are not refused for want of a
// history. With ratio 0.1 and a floor of 10 per second, 100 calls in 1.8 s whose attempts
// fail 30% of the time had 4 calls refused when the bucket started empty, and none now.
// The price is the burst that any healthy process may already spend: in a storm, a fresh
// budget pays for 1000×ratio retries besides the floor, and the bound on [Budget] counts
// them.
func NewBudget(ratio, minPerSecond float64) *Budget {
	if !(ratio >= 0 && ratio <= 1000) {
		panic("retry: " + call(ratio, minPerSecond) + ": ratio must be in [0, 1000]")
	}
	if !(minPerSecond >= 0) || math.IsInf(minPerSecond, 1) {
		panic("retry: " + call(ratio, minPerSecond) + ": floor must be a finite number >= 0")
	}
	b := &Budget{
		floor:   newMinRate(minPerSecond),
		deposit: int64(math.Round(ratio * tokenScale)),
		epoch:   clock.Start(),
	}
	b.capacity = 1000 * b.deposit
	b.tokens.Store(b.capacity) // starts full
	return b
}

// call spells NewBudget's call with its arguments, for the messages of its panics.
func call(ratio, minPerSecond float64) string {
	return "NewBudget(" + strconv.FormatFloat(ratio, 'g', -1, 64) + ", " +
		strconv.FormatFloat(minPerSecond, 'g', -1, 64) + ")"
}

// Deposit records a successful call: it adds the ratio to the balance, up to the capacity.
// Retry loops call it; a caller that does not loop in-process (a job queue) calls it on
// each success.
func (b *Budget) Deposit() {
	if b.deposit == 0 {
		return
	}
	for {
		t := b.tokens.Load()
		if t >= b.capacity {
			return
		}
		if b.tokens.CompareAndSwap(t, min(t+b.deposit, b.capacity)) {
			return
		}
	}
}

// Withdraw asks for one retry. It takes a token from the balance if there is one, else a
// slot of the minimum rate if one is free, and reports whether the retry may go ahead.
func (b *Budget) Withdraw() bool {
	for {
		t := b.tokens.Load()
		if t < tokenScale {
			break
		}
		if b.tokens.CompareAndSwap(t, t-tokenScale) {
			return true
		}
	}
	if b.floor.off() {
		return false // and the clock need not be read
	}
	return b.floor.admit(uint64(max(b.epoch.Since(), 0)))
}

// Balance returns the bucket's balance in tokens (a retry costs one, so its integer part is
// the number of retries the bucket can pay for now), as the nearest float64, not counting
// the minimum rate.
func (b *Budget) Balance() float64 {
	return float64(b.tokens.Load()) / tokenScale
}
