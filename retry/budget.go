package retry

import (
	"math"
	"strconv"
	"sync/atomic"
	"time"
)

// Budget is a retry budget shared by any number of calls and goroutines, so that retries
// cannot multiply the load on a failing dependency (a retry storm). It combines a token
// bucket (gRPC and AWS style) with a minimum rate (Finagle style):
//
//   - each successful call deposits ratio tokens; each retry withdraws one whole token;
//     so in steady state retries are at most ratio × successes;
//   - when the bucket is empty, retries are still allowed at minPerSecond per second
//     (with a burst of one second's worth), so a quiet or starting client can retry at all;
//   - otherwise the retry is refused and the call gives up at once with ErrBudgetExhausted.
//
// First attempts never consult the budget. The bucket starts empty and holds at most the
// credit of 1,000 successes (1000×ratio tokens), so a long healthy period cannot bank an
// unbounded burst. Over any period of length T from a fresh Budget, the retries granted
// number at most ratio × successes (the bucket, which starts empty) plus
// max(1, minPerSecond) + minPerSecond×T (the floor).
//
// A Budget is safe for concurrent use and lock-free (atomic compare-and-swap only). Its clock
// is time.Now, so it follows testing/synctest's virtual time when created inside a bubble.
// Use [WithBudget] to attach it to policies; the zero Budget allows no retries.
type Budget struct {
	tokens   atomic.Int64 // balance in 1/tokenScale tokens, in [0, capacity]
	tat      atomic.Int64 // floor: GCRA theoretical arrival time, ns since epoch
	deposit  int64        // ratio in 1/tokenScale tokens; immutable
	capacity int64        // immutable
	interval int64        // ns between floor retries; 0: no floor; immutable
	window   int64        // ns of floor burst tolerance; immutable
	epoch    time.Time    // immutable
}

const tokenScale = 1_000_000

// NewBudget returns a budget where each success deposits ratio tokens, each retry costs one,
// and at least minPerSecond retries per second are allowed regardless of the balance.
// Typical values are 0.1 to 0.2 and 10. It panics if either is negative, NaN or infinite,
// or if ratio is above 1000.
func NewBudget(ratio, minPerSecond float64) *Budget {
	if !(ratio >= 0 && ratio <= 1000) {
		panic("retry: budget ratio must be in [0, 1000], got " + strconv.FormatFloat(ratio, 'g', -1, 64))
	}
	if !(minPerSecond >= 0) || math.IsInf(minPerSecond, 1) {
		panic("retry: budget floor must be a finite number >= 0, got " + strconv.FormatFloat(minPerSecond, 'g', -1, 64))
	}
	b := &Budget{
		deposit: int64(math.Round(ratio * tokenScale)),
		epoch:   time.Now(),
	}
	b.capacity = 1000 * b.deposit
	if minPerSecond > 0 {
		iv := float64(time.Second) / minPerSecond
		b.interval = int64(min(iv, float64(math.MaxInt64/4)))
		b.window = max(int64(time.Second), b.interval)
	}
	return b
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
	if b.interval == 0 {
		return false
	}
	// Generic cell rate algorithm: the floor admits a retry if, after it, the theoretical
	// arrival time is at most one window ahead of now.
	now := int64(time.Since(b.epoch))
	for {
		tat := b.tat.Load()
		next := max(tat, now) + b.interval
		if next-now > b.window {
			return false
		}
		if b.tat.CompareAndSwap(tat, next) {
			return true
		}
	}
}

// Balance returns the number of retries the bucket can pay for now, not counting the
// minimum rate.
func (b *Budget) Balance() float64 {
	return float64(b.tokens.Load()) / tokenScale
}
