package backoff

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"time"
)

// Jitter selects how a [Schedule] randomises its delays. The zero value is [NoJitter].
type Jitter uint8

const (
	// NoJitter uses the un-jittered delay t = min(cap, growth(n)).
	NoJitter Jitter = iota
	// FullJitter draws uniformly from [0, t].
	FullJitter
	// EqualJitter keeps half of t and draws the other half: t/2 + U[0, t/2].
	EqualJitter
	// DecorrelatedJitter draws min(cap, U[base, prev*3]), where prev is the previous delay
	// (base before the first retry). It ignores the schedule's growth: the factor of
	// [Exponential] and the steps of [Linear] do not apply. With a zero base every delay is
	// zero, as in the formula.
	DecorrelatedJitter
)

// String returns the jitter's lower-case name ("none", "full", "equal", "decorrelated").
func (j Jitter) String() string {
	switch j {
	case NoJitter:
		return "none"
	case FullJitter:
		return "full"
	case EqualJitter:
		return "equal"
	case DecorrelatedJitter:
		return "decorrelated"
	}
	return "Jitter(" + strconv.Itoa(int(j)) + ")"
}

type growth uint8

const (
	constant growth = iota
	linear
	exponential
)

// Schedule is an immutable backoff schedule: the delay before each retry. Build one with
// [Constant], [Linear] or [Exponential]. The zero Schedule is ready to use: every delay is zero
// (retry at once), and its Sequence yields zeros.
//
// A Schedule is a small value and is safe for concurrent use; copying it is cheap.
type Schedule struct {
	growth growth
	jitter Jitter
	seeded bool
	base   time.Duration
	cap    time.Duration
	factor float64       // exponential only; >= 1
	whole  uint64        // factor if it is a whole number (at most 2^63, which saturates), else 0
	flatAt int           // first attempt from which the un-jittered delay is flat
	flat   time.Duration // the un-jittered delay from flatAt on: cap, or base if it never grows
	seed   uint64        // used when seeded
	src    rand.Source   // if non-nil, the source of randomness (WithSource)
}

// Option configures a Schedule at construction. A nil Option makes the constructor panic.
type Option interface{ apply(*Schedule) }

type optionFunc func(*Schedule)

func (f optionFunc) apply(p *Schedule) { f(p) }

// WithJitter randomises every delay with the given kind of jitter. It panics if j is not one
// of the Jitter constants.
func WithJitter(j Jitter) Option {
	if j > DecorrelatedJitter {
		panic("backoff: WithJitter(" + j.String() + "): unknown jitter")
	}
	return optionFunc(func(p *Schedule) { p.jitter = j })
}

// WithSeed makes the schedule's randomness a pure function of seed, the attempt number and the
// previous delay, so that a schedule is reproducible: two Sequences of the same seeded schedule
// yield the same delays. It is meant for tests, docs and simulations; in production leave it
// out, or every client sharing the seed would retry in lockstep, which is what jitter is for
// avoiding.
func WithSeed(seed uint64) Option {
	return optionFunc(func(p *Schedule) { p.seeded, p.seed, p.src = true, seed, nil })
}

// WithSource draws the schedule's randomness from src, for callers that need their own
// generator or a fake one in tests (a source that always returns 0 gives the shortest
// schedule, math.MaxUint64 the longest). Every Sequence and every goroutine using the schedule
// calls src.Uint64, so src must be safe for concurrent use if the schedule is shared; the
// generators of math/rand/v2 are not (guard one with a mutex). For a reproducible schedule
// that needs no such care, use [WithSeed]. The last of WithSource and WithSeed wins. A nil src
// panics (leave the option out for the runtime's generator).
func WithSource(src rand.Source) Option {
	if src == nil {
		panic("backoff: WithSource(nil): nil source")
	}
	return optionFunc(func(p *Schedule) { p.src, p.seeded = src, false })
}

// Constant returns a schedule whose un-jittered delay is always d. It panics if d is negative.
func Constant(d time.Duration, opts ...Option) Schedule {
	if d < 0 {
		panic("backoff: Constant(" + d.String() + "): negative delay")
	}
	p := Schedule{growth: constant, base: d, cap: d, factor: 1, flat: d}
	return p.with(opts)
}

// Linear returns a schedule whose un-jittered delay for retry n (counting from 0) is
// min(cap, (n+1)*base): base, 2*base, 3*base, ... up to cap. It panics if base is negative or
// cap is below base.
func Linear(base, cap time.Duration, opts ...Option) Schedule {
	checkBaseCap("Linear("+base.String()+", "+cap.String()+")", base, cap)
	p := Schedule{growth: linear, base: base, cap: cap, factor: 1, flat: base}
	if base != 0 && base != cap { // else the schedule is flat at base from the start
		// smallest n with (n+1)*base >= cap
		k := cap / base
		if cap%base != 0 {
			k++
		}
		p.flatAt, p.flat = int(k-1), cap
	}
	return p.with(opts)
}

// Exponential returns a schedule whose un-jittered delay for retry n (counting from 0) is
// min(cap, base*factor^n). The first delay is exactly base, and with a whole-number factor
// (2, 3, 10, ...) every delay is the exact product, computed in integers. A fractional factor
// needs floating point: base*factor^n is evaluated in float64 and truncated to whole
// nanoseconds, so it carries float64's rounding. It panics if base is negative, factor is
// below 1 (or NaN, or infinite) or cap is below base.
func Exponential(base time.Duration, factor float64, cap time.Duration, opts ...Option) Schedule {
	call := "Exponential(" + base.String() + ", " + strconv.FormatFloat(factor, 'g', -1, 64) + ", " + cap.String() + ")"
	checkBaseCap(call, base, cap)
	if !(factor >= 1) || math.IsInf(factor, 1) {
		panic("backoff: " + call + ": factor must be a finite number >= 1")
	}
	p := Schedule{growth: exponential, base: base, cap: cap, factor: factor, flat: base}
	if factor == math.Trunc(factor) {
		p.whole = uint64(min(factor, 1<<63)) // any factor >= 2^63 takes every delay past n = 0 to the cap
	}
	if base != 0 && base != cap && factor != 1 { // else the schedule is flat at base
		p.flatAt, p.flat = p.firstAtCap(), cap
	}
	return p.with(opts)
}

// firstAtCap returns the smallest n with grown(n) = cap, computed with grown itself so that
// the schedule saturates exactly at flatAt; 0 < base < cap and factor > 1. A factor barely
// above 1 puts n near 2^57 and makes any estimate from logarithms far off (float rounding
// grows with n), so the search is bounded instead: double an upper bound, then bisect, at
// most about 2×63 evaluations of grown. The doubling stops by hi = 2^62: a whole factor is
// at least 2, and the smallest fractional factor, 1+2^-52, has a 2^62nd power (about
// e^1024) that overflows float64 to +Inf; base >= 1.
func (p *Schedule) firstAtCap() int {
	lo, hi := 0, 1 // grown(lo) = base < cap
	for p.grown(hi) < p.cap {
		lo, hi = hi, 2*hi
	}
	// grown(lo) < cap = grown(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if p.grown(mid) < p.cap {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// checkBaseCap panics, naming the constructor call, if base is negative or cap is below it.
func checkBaseCap(call string, base, cap time.Duration) {
	if base < 0 {
		panic("backoff: " + call + ": negative base")
	}
	if cap < base {
		panic("backoff: " + call + ": cap below base")
	}
}

func (p Schedule) with(opts []Option) Schedule {
	for _, o := range opts {
		if o == nil {
			panic("backoff: nil option")
		}
		o.apply(&p)
	}
	return p
}

// grown returns min(cap, base*factor^n) for 0 < base < cap, factor > 1 and n >= 0: exactly,
// in integers, for n = 0 and for a whole factor; in float64 for a fractional one. It is
// monotone in n, and above base for n >= 1 (factor >= 1+2^-52 adds at least one ulp to the
// float64 nearest base, which is at most half an ulp below it).
func (p *Schedule) grown(n int) time.Duration {
	if n == 0 {
		return p.base
	}
	if p.whole != 0 {
		return time.Duration(mulPow(uint64(p.base), p.whole, n, uint64(p.cap)))
	}
	v := float64(p.base) * powi(p.factor, n)
	if !(v < float64(p.cap)) {
		return p.cap
	}
	return time.Duration(v) // < cap: a float64 below float64(cap) is at most cap's floor
}

// mulPow returns min(limit, r*k^n) for r >= 1, k >= 2 and n >= 1, exactly: square and
// multiply, stopping as soon as a product reaches the limit or needs more than 64 bits.
func mulPow(r, k uint64, n int, limit uint64) uint64 {
	for {
		if n&1 == 1 {
			hi, lo := bits.Mul64(r, k)
			if hi != 0 || lo >= limit {
				return limit
			}
			r = lo
		}
		n >>= 1
		if n == 0 {
			return r
		}
		hi, lo := bits.Mul64(k, k)
		if hi != 0 {
			return limit // r will be multiplied by k^2 or more (n has a bit left): past 2^64
		}
		k = lo
	}
}

// powi returns f^n by repeated squaring: a few multiplications for the small n a schedule
// sees before its cap, where math.Pow would cost more than the rest of Next.
func powi(f float64, n int) float64 {
	r := 1.0
	for n > 0 {
		if n&1 == 1 {
			r *= f
		}
		f *= f
		n >>= 1
	}
	return r
}

// Cap returns the largest delay the schedule can return.
func (p Schedule) Cap() time.Duration { return p.cap }

// step returns the un-jittered delay of retry n (n >= 0), in [base, cap]. Below flatAt the
// schedule grows, so base > 0 there: growth never multiplies a zero base by an overflowed
// power (0*Inf is NaN). The flat test is kept apart from growing so that it inlines.
func (p *Schedule) step(n int) time.Duration {
	if n >= p.flatAt {
		return p.flat
	}
	return p.growing(n)
}

// growing returns the un-jittered delay of retry n for 0 <= n < flatAt.
func (p *Schedule) growing(n int) time.Duration {
	switch p.growth {
	case linear:
		return time.Duration(n+1) * p.base // < cap: n < flatAt
	case exponential:
		return p.grown(n)
	}
	return p.base
}

// Delay returns the delay before retry n, counting from 0 (the wait after the first failed
// attempt is Delay(0, 0)). prev is the delay returned for the previous retry; only
// DecorrelatedJitter uses it, and 0 (or any value below the base) means "none yet".
// A negative n counts as 0. The result is always in [0, Cap()].
//
// Delay is the stateless form of [Sequence.Next], for callers that do not loop in-process
// (a job queue storing the attempt number and last delay with the job): for the same schedule,
// n and prev it follows the same distribution, and with [WithSeed] it returns the same value.
func (p Schedule) Delay(n int, prev time.Duration) time.Duration { return p.delay(n, prev) }

func (p *Schedule) delay(n int, prev time.Duration) time.Duration {
	n = max(n, 0)
	switch p.jitter {
	case NoJitter:
		return p.step(n)
	case DecorrelatedJitter:
		return p.jittered(0, prev, p.draw(n, prev))
	}
	return p.jittered(p.step(n), prev, p.draw(n, prev))
}

// draw returns the random bits of the delay of retry n after a delay of prev, which
// DecorrelatedJitter first brings into [base, cap] (a seeded draw depends on it).
func (p *Schedule) draw(n int, prev time.Duration) uint64 {
	if p.jitter == DecorrelatedJitter {
		prev = min(max(prev, p.base), p.cap)
	}
	return p.random(n, prev)
}

// jittered returns the delay whose un-jittered delay is t (unused by DecorrelatedJitter),
// after a delay of prev, with r the random bits drawn for it (unused by NoJitter).
func (p *Schedule) jittered(t, prev time.Duration, r uint64) time.Duration {
	switch p.jitter {
	case FullJitter:
		return between(0, t, r)
	case EqualJitter:
		h := t / 2
		return h + between(0, t-h, r)
	case DecorrelatedJitter:
		prev = min(max(prev, p.base), p.cap)
		hi := time.Duration(math.MaxInt64)
		if prev <= math.MaxInt64/3 {
			hi = prev * 3
		}
		return min(p.cap, between(p.base, hi, r))
	}
	return t
}

// Spread returns d plus a random extra in [0, d/10], drawn like the delays of retry n, or d
// itself if the schedule has no jitter. It never returns less than d (a negative d counts as 0)
// and saturates instead of overflowing. A retry loop uses it on a server-provided delay
// (HTTP Retry-After) so that clients told the same time do not return in lockstep, yet none
// returns before it was asked to.
func (p Schedule) Spread(d time.Duration, n int) time.Duration {
	d = max(d, 0)
	if p.jitter == NoJitter {
		return d
	}
	extra := between(0, d/10, p.random(max(n, 0), d))
	if d > math.MaxInt64-extra {
		return math.MaxInt64
	}
	return d + extra
}

// Delays returns the first n delays of a fresh [Sequence]: the schedule a retry loop would
// follow. With [WithSeed] the list is reproducible. It panics if n is negative.
func (p Schedule) Delays(n int) []time.Duration {
	if n < 0 {
		panic("backoff: Delays(" + strconv.Itoa(n) + "): negative count")
	}
	out := make([]time.Duration, n)
	s := p.Sequence()
	for i := range out {
		out[i] = s.Next()
	}
	return out
}

// String describes the schedule, for logs and docs, e.g.
// "exponential(base=100ms, factor=2, cap=10s, jitter=full)".
func (p Schedule) String() string {
	var s string
	switch p.growth {
	case constant:
		s = "constant(" + p.base.String()
	case linear:
		s = "linear(base=" + p.base.String() + ", cap=" + p.cap.String()
	case exponential:
		s = fmt.Sprintf("exponential(base=%v, factor=%v, cap=%v", p.base, p.factor, p.cap)
	}
	if p.jitter != NoJitter {
		s += ", jitter=" + p.jitter.String()
	}
	return s + ")"
}

// random returns 64 random bits for retry n with previous delay prev.
func (p *Schedule) random(n int, prev time.Duration) uint64 {
	if p.src != nil {
		return p.src.Uint64()
	}
	if !p.seeded {
		return rand.Uint64()
	}
	return mix(p.seed ^ mix(uint64(n)^mix(uint64(prev)+golden)))
}

// golden is SplitMix64's increment (2^64 over the golden ratio).
const golden = 0x9e3779b97f4a7c15

// mix is the SplitMix64 finaliser: a bijective, well-distributed 64-bit hash.
func mix(z uint64) uint64 {
	z += golden
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// between maps r uniformly onto [lo, hi]; 0 <= lo <= hi.
func between(lo, hi time.Duration, r uint64) time.Duration {
	span := uint64(hi-lo) + 1 // <= 2^63: no overflow
	x, _ := bits.Mul64(r, span)
	return lo + time.Duration(x)
}

// Sequence is the state of one retry loop over a Schedule: the attempt number and the previous
// delay. Make one per loop with [Schedule.Sequence]. The zero Sequence is ready to use: it
// follows the zero Schedule, so every delay it yields is zero.
//
// A Sequence is a small value that is not safe for concurrent use; it needs no cleanup. A copy
// of a Sequence that has already drawn jitter draws what the original draws next: give each
// loop a Sequence of its own.
type Sequence struct {
	p    Schedule
	n    int
	prev time.Duration
	cur  time.Duration // the un-jittered delay of retry n-1, while the schedule grows
	rng  uint64        // SplitMix64 state for an unseeded schedule's jitter; 0 until first used
}

// Sequence returns a new sequence positioned before the first retry.
func (p Schedule) Sequence() Sequence { return Sequence{p: p} }

// Next returns the delay before the next retry and advances the sequence. It does not
// allocate. For a schedule with [WithSeed], the k-th call after a Reset returns what
// Delay(k-1, d) returns, d being the (k-1)-th call's result (0 for the first). Without a seed
// or a source, a Sequence draws its jitter from a generator of its own, seeded from the
// runtime's on first use, so that sequences do not move in lockstep.
func (s *Sequence) Next() time.Duration {
	d := s.p.flat
	if s.n < s.p.flatAt {
		if s.n > 0 && s.p.whole != 0 { // exponential with a whole factor: the exact product
			s.cur *= time.Duration(s.p.whole) // of the previous delay's, below the cap
			d = s.cur
		} else {
			d = s.grow()
		}
	}
	if s.p.jitter != NoJitter {
		// The random bits: the next value of the sequence's own generator, here in the common
		// case; draw for the others. The generator's state is 0 until draw seeds it, and
		// draw leaves it 0 when the schedule has a seed or a source.
		var r uint64
		if s.rng != 0 {
			r = s.step()
		} else {
			r = s.draw()
		}
		if s.p.jitter == FullJitter { // the common case, inlined: the same as jittered's
			d = between(0, d, r)
		} else {
			d = s.p.jittered(d, s.prev, r)
		}
	}
	if s.n < math.MaxInt {
		s.n++
	}
	s.prev = d
	return d
}

// draw returns the random bits for the next delay when Next cannot take them from the
// sequence's generator: the schedule's own draw if it has a seed or a source (the generator
// stays unused, its state 0), else the first value of the generator, which it seeds from the
// runtime's with a nonzero state.
func (s *Sequence) draw() uint64 {
	if s.p.seeded || s.p.src != nil {
		return s.p.draw(s.n, s.prev)
	}
	s.rng = rand.Uint64() | 1
	return s.step()
}

// step returns the next value of the sequence's generator (a SplitMix64 stream: the mix of its
// state, which then moves on by golden).
func (s *Sequence) step() uint64 {
	z := s.rng
	s.rng += golden
	return mix(z)
}

// grow returns step(s.n) for s.n < flatAt, but for the exponential step with a whole factor,
// which Next takes itself (s.cur times the factor). A linear schedule derives its delay from
// the previous one, which is the same product as step's: below flatAt every delay is below
// the cap, so no product overflows.
func (s *Sequence) grow() time.Duration {
	p := &s.p
	switch {
	case s.n == 0:
		s.cur = p.base
	case p.growth == linear:
		s.cur += p.base
	default:
		s.cur = p.grown(s.n)
	}
	return s.cur
}

// Reset rewinds the sequence to before the first retry.
func (s *Sequence) Reset() { s.n, s.prev = 0, 0 }
