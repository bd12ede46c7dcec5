package retry

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// minRate is a Budget's floor: it admits retries at a minimum rate of m per second with a
// burst of max(1, m), whatever the bucket holds. It counts in whole retries, exactly, for
// every finite rate:
//
//	earned(t) = floor(m × t)                    retries paid for by the rate t after the epoch
//	limit(t)  = floor(max(1, m) + m × t)        = earned(t + 1s) if m >= 1, earned(t) + 1 if not
//
// It is a generic cell rate algorithm kept in counts rather than in time: tat is the
// theoretical arrival count, and a retry at t is admitted if max(tat, earned(t)) + 1 <=
// limit(t), which then becomes tat. From the epoch on tat counts every admission and only
// grows, so by time t at most limit(t) retries were admitted: the documented bound. Over a
// period [t0, t1] that starts later, the admissions number at most limit(t1) -
// earned(t0) <= floor(max(1, m) + m×(t1-t0)) + 1: earned rounds down, so the floor may
// admit one more than the real-number bound.
//
// The rate is held as num/2^shift per second, which is m exactly (a float64 is a 53-bit
// integer times a power of two), and earned is computed in 128 bits, so there is no
// interval that rounds and no overflow: num < 2^64 and t < 2^64 ns. A rate of 2^64 or more
// (a burst of more retries than a uint64 can count) admits every retry.
//
// The zero minRate is no floor. A minRate is safe for concurrent use and lock-free: tat is
// replaced by compare-and-swap of a pointer to an immutable value, which costs one small
// allocation per admitted retry (the floor only pays when the bucket is empty).
type minRate struct {
	num   uint64 // the rate is num/2^shift per second; 0: no floor (unless all); immutable
	shift uint   // immutable
	slow  bool   // the rate is below 1 per second: the burst is one retry; immutable
	all   bool   // the rate is 2^64 per second or more: every retry is admitted; immutable

	tat atomic.Pointer[u128] // theoretical arrival count; nil is 0
}

func newMinRate(m float64) minRate {
	switch {
	case m == 0:
		return minRate{}
	case m >= 1<<64:
		return minRate{all: true}
	}
	frac, exp := math.Frexp(m) // m = frac × 2^exp, frac in [0.5, 1)
	num := uint64(math.Ldexp(frac, 53))
	shift := 53 - exp
	if shift < 0 { // m >= 2^53 is an integer below 2^64
		num <<= -shift
		shift = 0
	}
	return minRate{num: num, shift: uint(shift), slow: m < 1}
}

// off reports whether there is no floor.
func (f *minRate) off() bool { return f.num == 0 && !f.all }

// limit returns floor(max(1, m) + m × t) for t ns after the epoch, and earned(t).
func (f *minRate) limit(t uint64) (limit, earned u128) {
	earned = f.earned(t)
	if f.slow {
		return earned.inc(), earned
	}
	return f.earned(t + 1e9), earned // t < 2^63: no overflow
}

// admit reports whether the floor admits a retry now ns after the epoch, and records it.
// The floor must not be off.
func (f *minRate) admit(now uint64) bool {
	if f.all {
		return true
	}
	limit, earned := f.limit(now)
	for {
		p := f.tat.Load()
		next := earned
		if p != nil && earned.less(*p) {
			next = *p
		}
		next = next.inc()
		if limit.less(next) {
			return false
		}
		if f.tat.CompareAndSwap(p, &u128{next.hi, next.lo}) { // allocates only here
			return true
		}
	}
}

// earned returns floor(num × t / 2^shift / 1e9): the whole retries the rate pays for in t ns.
func (f *minRate) earned(t uint64) u128 {
	hi, lo := bits.Mul64(f.num, t)
	switch s := f.shift; {
	case s >= 128:
		return u128{}
	case s >= 64:
		hi, lo = 0, hi>>(s-64)
	case s > 0:
		hi, lo = hi>>s, lo>>s|hi<<(64-s)
	}
	// floor(floor(x / 2^s) / 1e9) = floor(x / (2^s × 1e9)); the quotient takes two steps
	// because it may not fit in 64 bits.
	q, _ := bits.Div64(hi%1e9, lo, 1e9)
	return u128{hi / 1e9, q}
}

// u128 is an unsigned 128-bit count.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// inc returns a+1; a count never reaches 2^128 (it is at most about 2^98).
func (a u128) inc() u128 {
	if a.lo == math.MaxUint64 {
		return u128{a.hi + 1, 0}
	}
	return u128{a.hi, a.lo + 1}
}
