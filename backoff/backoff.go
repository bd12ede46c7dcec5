package backoff

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"time"
)

// Jitter selects how a [Policy] randomises its delays. The zero value is [NoJitter].
type Jitter uint8

const (
	// NoJitter uses the un-jittered delay t = min(cap, growth(n)).
	NoJitter Jitter = iota
	// FullJitter draws uniformly from [0, t].
	FullJitter
	// EqualJitter keeps half of t and draws the other half: t/2 + U[0, t/2].
	EqualJitter
	// DecorrelatedJitter draws min(cap, U[base, prev*3]), where prev is the previous delay
	// (base before the first retry). It ignores the policy's growth: the factor of
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

// Policy is an immutable backoff schedule. Build one with [Constant], [Linear] or
// [Exponential]. The zero Policy is valid: every delay is zero.
//
// A Policy is a small value and is safe for concurrent use; copying it is cheap.
type Policy struct {
	growth growth
	jitter Jitter
	seeded bool
	base   time.Duration
	cap    time.Duration
	factor float64     // exponential only; >= 1
	capAt  int         // first attempt whose un-jittered delay is the cap
	seed   uint64      // used when seeded
	src    rand.Source // if non-nil, the source of randomness (WithSource)
}

// Option configures a Policy at construction. A nil Option makes the constructor panic.
type Option interface{ apply(*Policy) }

type optionFunc func(*Policy)

func (f optionFunc) apply(p *Policy) { f(p) }

// WithJitter randomises every delay with the given kind of jitter. It panics if j is not one
// of the Jitter constants.
func WithJitter(j Jitter) Option {
	if j > DecorrelatedJitter {
		panic("backoff: unknown jitter " + j.String())
	}
	return optionFunc(func(p *Policy) { p.jitter = j })
}

// WithSeed makes the policy's randomness a pure function of seed, the attempt number and the
// previous delay, so that a schedule is reproducible: two Sequences of the same seeded policy
// yield the same delays. It is meant for tests, docs and simulations; in production leave it
// out, or every client sharing the seed would retry in lockstep, which is what jitter is for
// avoiding.
func WithSeed(seed uint64) Option {
	return optionFunc(func(p *Policy) { p.seeded, p.seed, p.src = true, seed, nil })
}

// WithSource draws the policy's randomness from src, for callers that need their own
// generator or a fake one in tests (a source that always returns 0 gives the shortest
// schedule, math.MaxUint64 the longest). Every Sequence and every goroutine using the policy
// calls src.Uint64, so src must be safe for concurrent use if the policy is shared; the
// generators of math/rand/v2 are not (guard one with a mutex). For a reproducible schedule
// that needs no such care, use [WithSeed]. The last of WithSource and WithSeed wins.
func WithSource(src rand.Source) Option {
	return optionFunc(func(p *Policy) { p.src, p.seeded = src, false })
}

// Constant returns a policy whose un-jittered delay is always d. It panics if d is negative.
func Constant(d time.Duration, opts ...Option) Policy {
	if d < 0 {
		panic("backoff: negative delay " + d.String())
	}
	p := Policy{growth: constant, base: d, cap: d, factor: 1, capAt: 0}
	return p.with(opts)
}

// Linear returns a policy whose un-jittered delay for retry n (counting from 0) is
// min(cap, (n+1)*base): base, 2*base, 3*base, ... up to cap. It panics if base is negative or
// cap is below base.
func Linear(base, cap time.Duration, opts ...Option) Policy {
	checkBaseCap(base, cap)
	p := Policy{growth: linear, base: base, cap: cap, factor: 1}
	switch {
	case base == cap:
		p.capAt = 0
	case base == 0:
		p.capAt = math.MaxInt
	default:
		// smallest n with (n+1)*base >= cap
		k := cap / base
		if cap%base != 0 {
			k++
		}
		p.capAt = int(k - 1)
	}
	return p.with(opts)
}

// Exponential returns a policy whose un-jittered delay for retry n (counting from 0) is
// min(cap, base*factor^n). It panics if base is negative, factor is below 1 (or NaN, or
// infinite) or cap is below base.
func Exponential(base time.Duration, factor float64, cap time.Duration, opts ...Option) Policy {
	checkBaseCap(base, cap)
	if !(factor >= 1) || math.IsInf(factor, 1) {
		panic("backoff: factor must be a finite number >= 1, got " + strconv.FormatFloat(factor, 'g', -1, 64))
	}
	p := Policy{growth: exponential, base: base, cap: cap, factor: factor}
	switch {
	case base == cap:
		p.capAt = 0
	case base == 0 || factor == 1:
		p.capAt = math.MaxInt
	default:
		p.capAt = p.firstAtCap()
	}
	return p.with(opts)
}

// firstAtCap returns the smallest n with rawExp(n) >= cap, computed with rawExp itself so
// that the schedule saturates exactly at capAt; 0 < base < cap and factor > 1. A factor
// barely above 1 puts n near 2^57 and makes any estimate from logarithms far off (rawExp's
// rounding error grows with n), so the search is bounded instead: double an upper bound,
// then bisect, at most about 2×63 evaluations of rawExp. If even rawExp(MaxInt) is below
// cap, it returns MaxInt, and step clamps each delay to cap itself.
func (p *Policy) firstAtCap() int {
	c := float64(p.cap)
	lo, hi := 0, 1 // rawExp(lo) = base < cap
	for p.rawExp(hi) < c {
		if hi > math.MaxInt/2 {
			if p.rawExp(math.MaxInt) < c {
				return math.MaxInt
			}
			lo, hi = hi, math.MaxInt
			break
		}
		lo, hi = hi, 2*hi
	}
	// rawExp(lo) < cap <= rawExp(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if p.rawExp(mid) < c {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func checkBaseCap(base, cap time.Duration) {
	if base < 0 {
		panic("backoff: negative base " + base.String())
	}
	if cap < base {
		panic("backoff: cap " + cap.String() + " below base " + base.String())
	}
}

func (p Policy) with(opts []Option) Policy {
	for _, o := range opts {
		if o == nil {
			panic("backoff: nil option")
		}
		o.apply(&p)
	}
	return p
}

func (p *Policy) rawExp(n int) float64 {
	return float64(p.base) * powi(p.factor, n)
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

// Cap returns the largest delay the policy can return.
func (p Policy) Cap() time.Duration { return p.cap }

// step returns the un-jittered delay of retry n (n >= 0), in [base, cap].
func (p *Policy) step(n int) time.Duration {
	if n >= p.capAt {
		return p.cap
	}
	switch p.growth {
	case linear:
		return time.Duration(n+1) * p.base // < cap: n < capAt
	case exponential:
		v := p.rawExp(n)
		if !(v < float64(p.cap)) {
			return p.cap
		}
		return time.Duration(v)
	}
	return p.base
}

// Delay returns the delay before retry n, counting from 0 (the wait after the first failed
// attempt is Delay(0, 0)). prev is the delay returned for the previous retry; only
// DecorrelatedJitter uses it, and 0 (or any value below the base) means "none yet".
// A negative n counts as 0. The result is always in [0, Cap()].
//
// Delay is the stateless form of [Sequence.Next], for callers that do not loop in-process
// (a job queue storing the attempt number and last delay with the job): for the same policy,
// n and prev it follows the same distribution, and with [WithSeed] it returns the same value.
func (p Policy) Delay(n int, prev time.Duration) time.Duration { return p.delay(n, prev) }

func (p *Policy) delay(n int, prev time.Duration) time.Duration {
	if n < 0 {
		n = 0
	}
	switch p.jitter {
	case FullJitter:
		return between(0, p.step(n), p.random(n, prev))
	case EqualJitter:
		t := p.step(n)
		h := t / 2
		return h + between(0, t-h, p.random(n, prev))
	case DecorrelatedJitter:
		prev = min(max(prev, p.base), p.cap)
		hi := time.Duration(math.MaxInt64)
		if prev <= math.MaxInt64/3 {
			hi = prev * 3
		}
		return min(p.cap, between(p.base, hi, p.random(n, prev)))
	}
	return p.step(n)
}

// Spread returns d plus a random extra in [0, d/10], drawn like the delays of retry n, or d
// itself if the policy has no jitter. It never returns less than d (a negative d counts as 0)
// and saturates instead of overflowing. A retry loop uses it on a server-provided delay
// (HTTP Retry-After) so that clients told the same time do not return in lockstep, yet none
// returns before it was asked to.
func (p Policy) Spread(d time.Duration, n int) time.Duration {
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
func (p Policy) Delays(n int) []time.Duration {
	if n < 0 {
		panic("backoff: negative count " + strconv.Itoa(n))
	}
	out := make([]time.Duration, n)
	s := p.Sequence()
	for i := range out {
		out[i] = s.Next()
	}
	return out
}

// String describes the policy, for logs and docs, e.g.
// "exponential(base=100ms, factor=2, cap=10s, jitter=full)".
func (p Policy) String() string {
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
func (p *Policy) random(n int, prev time.Duration) uint64 {
	if p.src != nil {
		return p.src.Uint64()
	}
	if !p.seeded {
		return rand.Uint64()
	}
	return mix(p.seed ^ mix(uint64(n)^mix(uint64(prev)+0x9e3779b97f4a7c15)))
}

// mix is the SplitMix64 finaliser: a bijective, well-distributed 64-bit hash.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
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

// Sequence is the state of one retry loop over a Policy: the attempt number and the previous
// delay. Make one per loop with [Policy.Sequence]; the zero Sequence follows the zero Policy.
//
// A Sequence is a small value that is not safe for concurrent use; it needs no cleanup.
type Sequence struct {
	p    Policy
	n    int
	prev time.Duration
}

// Sequence returns a new sequence positioned before the first retry.
func (p Policy) Sequence() Sequence { return Sequence{p: p} }

// Next returns the delay before the next retry and advances the sequence. It does not
// allocate.
func (s *Sequence) Next() time.Duration {
	d := s.p.delay(s.n, s.prev)
	if s.n < math.MaxInt {
		s.n++
	}
	s.prev = d
	return d
}

// Reset rewinds the sequence to before the first retry.
func (s *Sequence) Reset() { s.n, s.prev = 0, 0 }
