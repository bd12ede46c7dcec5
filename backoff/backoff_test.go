package backoff_test

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/backoff"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The core module keeps its tests on the standard library; these are the few helpers needed.

func equal(t *testing.T, want, got any, msg ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%s\nwant %v\n got %v", describe(msg), want, got)
	}
}

func describe(msg []any) string {
	if len(msg) == 0 {
		return "mismatch"
	}
	if f, ok := msg[0].(string); ok {
		return fmt.Sprintf(f, msg[1:]...)
	}
	return fmt.Sprint(msg...)
}

func check(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

func near(t *testing.T, want, got, delta float64, msg string) {
	t.Helper()
	if math.Abs(want-got) > delta {
		t.Fatalf("%s: got %v, want %v ± %v", msg, got, want, delta)
	}
}

func panicsWith(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r != want {
			t.Fatalf("panic value %#v, want %q", r, want)
		}
	}()
	f()
}

const ms = time.Millisecond

func TestSchedulesWithoutJitter(t *testing.T) {
	equal(t, []time.Duration{time.Second, time.Second, time.Second},
		backoff.Constant(time.Second).Delays(3))
	equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3500 * ms, 3500 * ms},
		backoff.Linear(time.Second, 3500*ms).Delays(5))
	equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second},
		backoff.Exponential(100*ms, 2, time.Second).Delays(6))
	equal(t, []time.Duration{100 * ms, 150 * ms, 225 * ms, 337500 * time.Microsecond, 400 * ms},
		backoff.Exponential(100*ms, 1.5, 400*ms).Delays(5))
	equal(t, []time.Duration{0, 0}, backoff.Schedule{}.Delays(2), "zero schedule")
	equal(t, []time.Duration{0, 0}, backoff.Exponential(0, 2, time.Second).Delays(2), "zero base stays zero")
	equal(t, []time.Duration{5 * ms, 5 * ms}, backoff.Exponential(5*ms, 1, time.Second).Delays(2), "factor 1")
	equal(t, []time.Duration{5 * ms, 5 * ms}, backoff.Linear(5*ms, 5*ms).Delays(2), "cap == base")
	equal(t, []time.Duration{}, backoff.Constant(time.Second).Delays(0))
}

func TestHugeAttemptNumbersSaturateAtTheCap(t *testing.T) {
	cases := []backoff.Schedule{
		backoff.Exponential(100*ms, 2, time.Minute),
		backoff.Exponential(1, 2, math.MaxInt64),
		backoff.Exponential(1, 1.01, math.MaxInt64),
		backoff.Exponential(time.Second, math.MaxFloat64, time.Hour),
		backoff.Linear(time.Millisecond, time.Second),
		backoff.Linear(math.MaxInt64/3, math.MaxInt64),
	}
	for _, p := range cases {
		for _, n := range []int{10_000, 1 << 40, math.MaxInt} {
			equal(t, p.Cap(), p.Delay(n, 0), "%v attempt %d", p, n)
		}
	}
	// attempt 10,000 with factor 2 gives the cap, not an overflowed or negative value.
	equal(t, 30*time.Second, backoff.Exponential(time.Millisecond, 2, 30*time.Second).Delay(10_000, 0))
	// Below the cap, growth is monotone right up to it.
	p := backoff.Exponential(1, 2, math.MaxInt64)
	for n := 0; n < 63; n++ {
		equal(t, time.Duration(1)<<n, p.Delay(n, 0))
	}
	equal(t, time.Duration(math.MaxInt64), p.Delay(63, 0))
	// A negative attempt counts as the first.
	equal(t, 100*ms, backoff.Exponential(100*ms, 2, time.Second).Delay(-5, 0))
}

// Regression: Exponential hung at construction for a factor barely above 1
// (math.Nextafter(1, 2) puts the cap-reaching attempt near 2^57, and the old linear
// refinement walked there from a far-off estimate). The attempt it computes must be the
// first whose delay is the cap, and no delay may exceed the cap.
func TestFactorsNearOneBuildAndSaturate(t *testing.T) {
	factors := []float64{math.Nextafter(1, 2), 1 + 1e-15, 1 + 1e-12, 1 + 1e-9, 1 + 1e-6, 1.0001}
	bounds := [][2]time.Duration{{1, time.Hour}, {time.Millisecond, time.Minute}, {1, math.MaxInt64}, {time.Hour, time.Hour + 1}}
	for _, f := range factors {
		for _, b := range bounds {
			base, cap := b[0], b[1]
			p := backoff.Exponential(base, f, cap)
			n, _ := backoff.FlatAt(p)
			want := math.Log(float64(cap)/float64(base)) / math.Log1p(f-1)
			// float64 rounding grows with n; the exact attempt is within 0.1% of the
			// real-number answer for these factors.
			near(t, want, float64(n), want*1e-3+1, fmt.Sprintf("%v: cap-reaching attempt", p))
			equal(t, cap, p.Delay(n, 0), "%v: delay of attempt %d", p, n)
			check(t, p.Delay(n-1, 0) < cap, "%v: delay of attempt %d is already the cap", p, n-1)
			check(t, p.Delay(n-2, 0) <= p.Delay(n-1, 0), "%v: not monotone below the cap", p)
			for _, j := range []backoff.Jitter{backoff.NoJitter, backoff.FullJitter, backoff.EqualJitter, backoff.DecorrelatedJitter} {
				q := backoff.Exponential(base, f, cap, backoff.WithJitter(j), backoff.WithSeed(uint64(n)))
				for _, k := range []int{0, 1, n / 2, n - 1, n, n + 1, 1 << 40, math.MaxInt} {
					d := q.Delay(k, cap/2)
					check(t, d >= 0 && d <= cap, "%v: Delay(%d) = %v, want in [0, %v]", q, k, d, cap)
				}
			}
		}
	}
}

// For factors whose schedules are short enough to walk, the cap-reaching attempt found by
// the search is the one a linear scan finds.
func TestFlatAtMatchesALinearScan(t *testing.T) {
	for _, f := range []float64{1.001, 1.01, 1.1, 1.5, 2, math.E, 3, 10, 1e10, math.MaxFloat64} {
		for _, b := range [][2]time.Duration{{1, 2}, {1, time.Second}, {100 * ms, 10 * time.Second}, {3, math.MaxInt64}, {time.Second, time.Second + 1}} {
			p := backoff.Exponential(b[0], f, b[1])
			n := 0
			for p.Delay(n, 0) < p.Cap() {
				n++
			}
			k, flat := backoff.FlatAt(p)
			equal(t, n, k, "%v", p)
			equal(t, p.Cap(), flat, "%v", p)
		}
	}
}

func TestFullJitterStaysInRangeAndIsUniform(t *testing.T) {
	const seeds = 20_000
	tmax := 800 * ms // the un-jittered delay of retry 3
	var sum float64
	var low, high int
	for s := range uint64(seeds) {
		p := backoff.Exponential(100*ms, 2, time.Second, backoff.WithJitter(backoff.FullJitter), backoff.WithSeed(s))
		d := p.Delay(3, 0)
		check(t, d >= 0 && d <= tmax, "delay %v", d)
		sum += float64(d)
		if d < tmax/10 {
			low++
		}
		if d > tmax*9/10 {
			high++
		}
	}
	mean := time.Duration(sum / seeds)
	near(t, float64(tmax/2), float64(mean), float64(tmax)/50, "mean")
	near(t, seeds/10, float64(low), seeds/50, "lowest decile")
	near(t, seeds/10, float64(high), seeds/50, "highest decile")
}

func TestEqualJitterKeepsHalf(t *testing.T) {
	var sum float64
	const seeds = 20_000
	for s := range uint64(seeds) {
		p := backoff.Exponential(100*ms, 2, time.Second, backoff.WithJitter(backoff.EqualJitter), backoff.WithSeed(s))
		for n, tn := range []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second} {
			d := p.Delay(n, 0)
			check(t, d >= tn/2 && d <= tn, "retry %d delay %v", n, d)
			if n == 4 {
				sum += float64(d)
			}
		}
	}
	near(t, float64(750*ms), sum/seeds, float64(10*ms), "mean at the cap")
}

func TestDecorrelatedJitterFollowsThePreviousDelay(t *testing.T) {
	base, cap := 10*ms, 500*ms
	for s := range uint64(2000) {
		p := backoff.Exponential(base, 2, cap, backoff.WithJitter(backoff.DecorrelatedJitter), backoff.WithSeed(s))
		seq := p.Sequence()
		prev := base
		for n := range 30 {
			d := seq.Next()
			check(t, d >= base && d <= min(cap, 3*prev), "seed %d retry %d: %v after %v", s, n, d, prev)
			equal(t, d, p.Delay(n, prev), "Delay and Sequence agree")
			prev = d
		}
	}
	// A previous delay outside [base, cap] is clamped into it.
	p := backoff.Exponential(base, 2, cap, backoff.WithJitter(backoff.DecorrelatedJitter))
	for range 1000 {
		d := p.Delay(7, math.MaxInt64)
		check(t, d >= base && d <= cap, "%v", d)
		d = p.Delay(7, -time.Hour)
		check(t, d >= base && d <= 3*base, "%v", d)
	}
}

func TestSeededSchedulesAreReproducible(t *testing.T) {
	for _, j := range []backoff.Jitter{backoff.FullJitter, backoff.EqualJitter, backoff.DecorrelatedJitter} {
		p := backoff.Exponential(100*ms, 2, 10*time.Second, backoff.WithJitter(j), backoff.WithSeed(42))
		a, b := p.Delays(20), p.Delays(20)
		equal(t, a, b, "%v", j)
		q := backoff.Exponential(100*ms, 2, 10*time.Second, backoff.WithJitter(j), backoff.WithSeed(43))
		check(t, !reflect.DeepEqual(a, q.Delays(20)), "%v: another seed, same schedule", j)
		// Reset rewinds a sequence.
		seq := p.Sequence()
		first := []time.Duration{seq.Next(), seq.Next(), seq.Next()}
		seq.Reset()
		equal(t, first, []time.Duration{seq.Next(), seq.Next(), seq.Next()})
		equal(t, a[:3], first)
	}
}

func TestUnseededJitterVaries(t *testing.T) {
	p := backoff.Exponential(time.Second, 2, time.Hour, backoff.WithJitter(backoff.FullJitter))
	seen := map[time.Duration]bool{}
	for range 100 {
		seen[p.Delay(5, 0)] = true
	}
	check(t, len(seen) > 90, "only %d distinct delays in 100", len(seen))
}

func TestSpreadOnlyAdds(t *testing.T) {
	equal(t, 3*time.Second, backoff.Constant(time.Second).Spread(3*time.Second, 0), "no jitter: exact")
	equal(t, time.Duration(0), backoff.Constant(time.Second).Spread(-time.Second, 0))
	for s := range uint64(5000) {
		p := backoff.Constant(time.Second, backoff.WithJitter(backoff.FullJitter), backoff.WithSeed(s))
		d := p.Spread(3*time.Second, 2)
		check(t, d >= 3*time.Second && d <= 3300*ms, "%v", d)
		equal(t, d, p.Spread(3*time.Second, 2), "seeded spread is reproducible")
	}
	p := backoff.Constant(time.Second, backoff.WithJitter(backoff.EqualJitter))
	equal(t, time.Duration(math.MaxInt64), p.Spread(math.MaxInt64, 0), "saturates")
}

func TestBadInputPanics(t *testing.T) {
	cases := map[string]func(){
		"backoff: Constant(-1s): negative delay":                                   func() { backoff.Constant(-time.Second) },
		"backoff: Linear(-1s, 1s): negative base":                                  func() { backoff.Linear(-time.Second, time.Second) },
		"backoff: Exponential(2s, 2, 1s): cap below base":                          func() { backoff.Exponential(2*time.Second, 2, time.Second) },
		"backoff: Linear(2s, 1s): cap below base":                                  func() { backoff.Linear(2*time.Second, time.Second) },
		"backoff: Exponential(-1s, 2, 1s): negative base":                          func() { backoff.Exponential(-time.Second, 2, time.Second) },
		"backoff: Exponential(1s, 0.5, 1m0s): factor must be a finite number >= 1": func() { backoff.Exponential(time.Second, 0.5, time.Minute) },
		"backoff: Exponential(1s, NaN, 1m0s): factor must be a finite number >= 1": func() { backoff.Exponential(time.Second, math.NaN(), time.Minute) },
		"backoff: Exponential(1s, +Inf, 1m0s): factor must be a finite number >= 1": func() {
			backoff.Exponential(time.Second, math.Inf(1), time.Minute)
		},
		"backoff: WithJitter(Jitter(9)): unknown jitter": func() { backoff.WithJitter(9) },
		"backoff: WithSource(nil): nil source":           func() { backoff.WithSource(nil) },
		"backoff: Delays(-1): negative count":            func() { backoff.Constant(time.Second).Delays(-1) },
		// A nil Option used to panic with a bare nil dereference.
		"backoff: nil option": func() { backoff.Constant(time.Second, nil) },
	}
	for msg, f := range cases {
		panicsWith(t, msg, f)
	}
	panicsWith(t, "backoff: nil option", func() { backoff.Linear(time.Second, time.Minute, backoff.WithSeed(1), nil) })
	panicsWith(t, "backoff: nil option", func() { backoff.Exponential(time.Second, 2, time.Minute, nil) })
}

func TestString(t *testing.T) {
	equal(t, "constant(1s)", backoff.Constant(time.Second).String())
	equal(t, "linear(base=1s, cap=5s, jitter=equal)",
		backoff.Linear(time.Second, 5*time.Second, backoff.WithJitter(backoff.EqualJitter)).String())
	equal(t, "exponential(base=100ms, factor=2, cap=10s, jitter=full)",
		backoff.Exponential(100*ms, 2, 10*time.Second, backoff.WithJitter(backoff.FullJitter)).String())
	equal(t, "decorrelated", backoff.DecorrelatedJitter.String())
	equal(t, "none", backoff.NoJitter.String())
}

func TestNextDoesNotAllocate(t *testing.T) {
	for _, j := range []backoff.Jitter{backoff.NoJitter, backoff.FullJitter, backoff.EqualJitter, backoff.DecorrelatedJitter} {
		for _, seed := range []bool{false, true} {
			opts := []backoff.Option{backoff.WithJitter(j)}
			if seed {
				opts = append(opts, backoff.WithSeed(1))
			}
			p := backoff.Exponential(100*ms, 2, 10*time.Second, opts...)
			seq := p.Sequence()
			allocs := testing.AllocsPerRun(1000, func() { _ = seq.Next() })
			equal(t, 0.0, allocs, "%v seeded=%v", j, seed)
		}
	}
}

// A Schedule is a value: goroutines share one, each with its own Sequence.
func TestScheduleSharedByGoroutines(t *testing.T) {
	p := backoff.Exponential(ms, 2, 100*ms, backoff.WithJitter(backoff.DecorrelatedJitter), backoff.WithSeed(7))
	want := p.Delays(50)
	var wg sync.WaitGroup
	got := make([][]time.Duration, 8)
	for i := range got {
		wg.Go(func() {
			seq := p.Sequence()
			for range 50 {
				got[i] = append(got[i], seq.Next())
			}
		})
	}
	wg.Wait()
	for i := range got {
		equal(t, want, got[i])
	}
}

func FuzzDelay(f *testing.F) {
	f.Add(uint8(2), int64(100*ms), int64(10*time.Second), 2.0, uint8(1), uint64(1), 10_000, int64(0))
	f.Add(uint8(1), int64(1), int64(math.MaxInt64), 1.0, uint8(3), uint64(9), math.MaxInt, int64(math.MaxInt64))
	f.Add(uint8(2), int64(0), int64(0), 1e300, uint8(2), uint64(0), -1, int64(-1))
	f.Add(uint8(0), int64(5), int64(5), 1.5, uint8(0), uint64(3), 3, int64(4))
	// Factors barely above 1 (Exponential used to hang building these).
	f.Add(uint8(2), int64(1), int64(time.Hour), math.Nextafter(1, 2), uint8(0), uint64(0), 1<<57, int64(0))
	f.Add(uint8(2), int64(1), int64(math.MaxInt64), 1+1e-12, uint8(1), uint64(1), math.MaxInt, int64(0))
	f.Add(uint8(2), int64(ms), int64(time.Minute), 1+1e-9, uint8(3), uint64(5), 1<<40, int64(ms))
	f.Add(uint8(0x80), int64(1), int64(time.Hour), 0.5, uint8(2), uint64(2), 1<<50, int64(0))
	f.Fuzz(func(t *testing.T, kind uint8, base, cap int64, factor float64, jitter uint8, seed uint64, n int, prev int64) {
		if kind&0x80 != 0 {
			// Steer half the inputs to factors in [1, 1+1e-6), where the cap is reached
			// only after a huge number of attempts; the fuzzer rarely finds them itself.
			factor = 1 + math.Mod(math.Abs(factor), 1)*1e-6
		}
		valid := base >= 0 && cap >= base && jitter <= uint8(backoff.DecorrelatedJitter)
		if kind%3 == 2 {
			valid = valid && factor >= 1 && !math.IsInf(factor, 1)
		}
		var p backoff.Schedule
		build := func() {
			opts := []backoff.Option{backoff.WithJitter(backoff.Jitter(jitter))}
			switch seed % 4 {
			case 1, 3:
				opts = append(opts, backoff.WithSeed(seed))
			case 2:
				opts = append(opts, backoff.WithSource(fixedSource(prev)))
			}
			switch kind % 3 {
			case 0:
				p = backoff.Constant(time.Duration(base), opts...)
				cap = base
			case 1:
				p = backoff.Linear(time.Duration(base), time.Duration(cap), opts...)
			default:
				p = backoff.Exponential(time.Duration(base), factor, time.Duration(cap), opts...)
			}
		}
		if !valid {
			defer func() {
				r := recover()
				if kind%3 == 0 && base >= 0 && jitter <= 3 {
					return // Constant has no cap or factor to reject
				}
				msg, _ := r.(string)
				if !strings.HasPrefix(msg, "backoff: ") {
					t.Fatalf("invalid input did not panic with a backoff: message: %v", r)
				}
			}()
			build()
			return
		}
		build()
		check := func(d time.Duration, what string) {
			if d < 0 || d > time.Duration(cap) {
				t.Fatalf("%v: %s = %v, want in [0, %v]", p, what, d, time.Duration(cap))
			}
		}
		check(p.Delay(n, time.Duration(prev)), "Delay(n, prev)")
		if kind%3 == 2 {
			// The schedule flattens exactly where the search found: from attempt k on, the
			// delay is the flat one (the cap, or the base of a schedule that never grows);
			// the delay before k is below it.
			plain := backoff.Exponential(time.Duration(base), factor, time.Duration(cap))
			k, flat := backoff.FlatAt(plain)
			if plain.Delay(k, 0) != flat || plain.Delay(math.MaxInt, 0) != flat || (k > 0 && plain.Delay(k-1, 0) >= flat) {
				t.Fatalf("%v: flat from attempt %d at %v: delays %v, %v, %v at MaxInt", plain, k, flat,
					plain.Delay(k-1, 0), plain.Delay(k, 0), plain.Delay(math.MaxInt, 0))
			}
		}
		check(p.Delay(10_000, 0), "Delay(10000, 0)")
		check(p.Delay(math.MaxInt, 0), "Delay(MaxInt, 0)")
		seq := p.Sequence()
		for i := range 70 {
			check(seq.Next(), "Next #"+string(rune('0'+i%10)))
		}
		if s := p.Spread(time.Duration(prev), n); s < max(time.Duration(prev), 0) {
			t.Fatalf("Spread(%v) = %v went down", time.Duration(prev), s)
		}
	})
}

// fixedSource always returns the same bits: 0 draws the low end of every range, MaxUint64
// the high end.
type fixedSource uint64

func (f fixedSource) Uint64() uint64 { return uint64(f) }

func TestInjectedSourceDrawsExactDelays(t *testing.T) {
	low, high := backoff.WithSource(fixedSource(0)), backoff.WithSource(fixedSource(math.MaxUint64))
	exp := func(j backoff.Jitter, src backoff.Option) backoff.Schedule {
		return backoff.Exponential(100*ms, 2, time.Second, backoff.WithJitter(j), src)
	}
	equal(t, []time.Duration{0, 0, 0, 0, 0}, exp(backoff.FullJitter, low).Delays(5))
	equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second}, exp(backoff.FullJitter, high).Delays(5))
	equal(t, []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 500 * ms}, exp(backoff.EqualJitter, low).Delays(5))
	equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second}, exp(backoff.EqualJitter, high).Delays(5))
	equal(t, []time.Duration{100 * ms, 100 * ms, 100 * ms}, exp(backoff.DecorrelatedJitter, low).Delays(3))
	equal(t, []time.Duration{300 * ms, 900 * ms, time.Second, time.Second}, exp(backoff.DecorrelatedJitter, high).Delays(4))
	equal(t, 3300*ms, exp(backoff.FullJitter, high).Spread(3*time.Second, 0))
	// The last of WithSeed and WithSource wins.
	seeded := backoff.Exponential(100*ms, 2, time.Second, backoff.WithJitter(backoff.FullJitter), high, backoff.WithSeed(5))
	equal(t, backoff.Exponential(100*ms, 2, time.Second, backoff.WithJitter(backoff.FullJitter), backoff.WithSeed(5)).Delays(5), seeded.Delays(5))
	sourced := backoff.Exponential(100*ms, 2, time.Second, backoff.WithJitter(backoff.FullJitter), backoff.WithSeed(5), low)
	equal(t, []time.Duration{0, 0}, sourced.Delays(2))
}

var allJitters = []backoff.Jitter{backoff.NoJitter, backoff.FullJitter, backoff.EqualJitter, backoff.DecorrelatedJitter}

// edgeAttempts are the attempt numbers where float growth used to break: 1,023/1,024 is where
// 2^n overflows float64, 1,751 where 1.5^n does, and MaxInt collided with the "never reaches
// the cap" marker.
var edgeAttempts = []int{0, 1, 2, 1023, 1024, 1750, 1751, 1 << 40, math.MaxInt - 1, math.MaxInt}

// Regression (issue 14, item 11): a zero base jumped to the cap once base*factor^n became
// 0*Inf = NaN (attempt 1,024 with factor 2, 1,751 with 1.5), and Linear(0, cap) gave the cap
// at attempt MaxInt. A zero base is zero at every attempt, with every jitter and any source.
func TestZeroBaseIsZeroAtEveryAttempt(t *testing.T) {
	builds := map[string]func(...backoff.Option) backoff.Schedule{
		"exponential factor 1":   func(o ...backoff.Option) backoff.Schedule { return backoff.Exponential(0, 1, 10*time.Second, o...) },
		"exponential factor 1.5": func(o ...backoff.Option) backoff.Schedule { return backoff.Exponential(0, 1.5, 10*time.Second, o...) },
		"exponential factor 2":   func(o ...backoff.Option) backoff.Schedule { return backoff.Exponential(0, 2, 10*time.Second, o...) },
		"exponential huge factor": func(o ...backoff.Option) backoff.Schedule {
			return backoff.Exponential(0, math.MaxFloat64, math.MaxInt64, o...)
		},
		"linear":   func(o ...backoff.Option) backoff.Schedule { return backoff.Linear(0, time.Hour, o...) },
		"constant": func(o ...backoff.Option) backoff.Schedule { return backoff.Constant(0, o...) },
	}
	for name, build := range builds {
		for _, j := range allJitters {
			for _, src := range []backoff.Option{backoff.WithSource(fixedSource(0)), backoff.WithSource(fixedSource(math.MaxUint64)), backoff.WithSeed(3)} {
				p := build(backoff.WithJitter(j), src)
				for _, n := range edgeAttempts {
					equal(t, time.Duration(0), p.Delay(n, 0), "%s %v: Delay(%d)", name, p, n)
				}
				seq := p.Sequence()
				for i := range 2000 {
					equal(t, time.Duration(0), seq.Next(), "%s %v: Next #%d", name, p, i)
				}
			}
		}
	}
}

// Regression (issue 14, item 12): with factor 1 the "never reaches the cap" marker was
// MaxInt, so Delay(MaxInt) was the cap. Factor 1 stays at the base for every attempt; the
// jitters draw from [0, base] (full) and [base/2, base] (equal) at every attempt.
func TestFactorOneNeverGrows(t *testing.T) {
	low, high := backoff.WithSource(fixedSource(0)), backoff.WithSource(fixedSource(math.MaxUint64))
	base, cap := 100*ms, 10*time.Second
	for _, n := range edgeAttempts {
		equal(t, base, backoff.Exponential(base, 1, cap).Delay(n, 0), "no jitter, attempt %d", n)
		equal(t, time.Duration(0), backoff.Exponential(base, 1, cap, backoff.WithJitter(backoff.FullJitter), low).Delay(n, 0), "full low %d", n)
		equal(t, base, backoff.Exponential(base, 1, cap, backoff.WithJitter(backoff.FullJitter), high).Delay(n, 0), "full high %d", n)
		equal(t, base/2, backoff.Exponential(base, 1, cap, backoff.WithJitter(backoff.EqualJitter), low).Delay(n, 0), "equal low %d", n)
		equal(t, base, backoff.Exponential(base, 1, cap, backoff.WithJitter(backoff.EqualJitter), high).Delay(n, 0), "equal high %d", n)
		// Decorrelated jitter ignores the factor: it follows prev up to the cap.
		equal(t, cap, backoff.Exponential(base, 1, cap, backoff.WithJitter(backoff.DecorrelatedJitter), high).Delay(n, cap), "decorrelated %d", n)
		// A growing schedule still reaches its cap, and a base equal to the cap is flat.
		if n >= 1023 {
			equal(t, cap, backoff.Exponential(base, 1.5, cap).Delay(n, 0), "factor 1.5, attempt %d", n)
		}
		equal(t, base, backoff.Exponential(base, 2, base).Delay(n, 0), "cap == base, attempt %d", n)
	}
	seq := backoff.Exponential(base, 1, cap).Sequence()
	for i := range 2000 {
		equal(t, base, seq.Next(), "Next #%d", i)
	}
}

// Regression (issue 14, item 13): delays were computed in float64, so a base above 2^53 ns
// came back as the nearest float64 (Delay(0) off by up to 512 ns at 2^62), and a schedule
// with a whole-number factor was off at every step. The first delay is exactly the base for
// every base, factor and jitter; with a whole-number factor every delay is exact.
func TestLargeBasesAreExact(t *testing.T) {
	low, high := backoff.WithSource(fixedSource(0)), backoff.WithSource(fixedSource(math.MaxUint64))
	bases := []time.Duration{1<<53 + 1, 1<<53 + 3, 1<<62 + 1, math.MaxInt64/3 + 2, math.MaxInt64 - 1}
	factors := []float64{math.Nextafter(1, 2), 1.5, 2, 3, 10, math.MaxFloat64}
	for _, base := range bases {
		for _, f := range factors {
			exp := func(o ...backoff.Option) backoff.Schedule { return backoff.Exponential(base, f, math.MaxInt64, o...) }
			equal(t, base, exp().Delay(0, 0), "%v", exp())
			equal(t, base, exp(backoff.WithJitter(backoff.FullJitter), high).Delay(0, 0), "full jitter, high")
			equal(t, base, exp(backoff.WithJitter(backoff.EqualJitter), high).Delay(0, 0), "equal jitter, high")
			equal(t, base/2, exp(backoff.WithJitter(backoff.EqualJitter), low).Delay(0, 0), "equal jitter, low")
			equal(t, base, exp(backoff.WithJitter(backoff.DecorrelatedJitter), low).Delay(0, 0), "decorrelated, low")
			seq := exp().Sequence()
			equal(t, base, seq.Next(), "Sequence")
			equal(t, base, backoff.Exponential(base, f, base+1).Delay(0, 0), "cap just above the base")
		}
		equal(t, base, backoff.Linear(base, math.MaxInt64).Delay(0, 0), "linear")
		equal(t, base, backoff.Constant(base).Delay(5, 0), "constant")
	}
	// A whole-number factor grows in integers: every step is the exact product.
	b := time.Duration(1<<53 + 1)
	equal(t, []time.Duration{b, 2 * b, 4 * b, 8 * b}, backoff.Exponential(b, 2, math.MaxInt64).Delays(4))
	equal(t, []time.Duration{b, 3 * b, 9 * b, 27 * b}, backoff.Exponential(b, 3, math.MaxInt64).Delays(4))
	d := time.Duration(123_456_789_012_345_679)
	equal(t, []time.Duration{d, 10 * d, math.MaxInt64}, backoff.Exponential(d, 10, math.MaxInt64).Delays(3))
	// A cap that float64 cannot hold is reached exactly where the integers reach it:
	// 2^62 is below 2^62+1, though both are the same float64.
	p := backoff.Exponential(1, 2, 1<<62+1)
	equal(t, time.Duration(1<<62), p.Delay(62, 0))
	equal(t, time.Duration(1<<62+1), p.Delay(63, 0))
	k, _ := backoff.FlatAt(p)
	equal(t, 63, k)
}

// The zero Schedule and the zero Sequence are ready to use: every delay is zero, for every
// attempt, and Reset keeps it so.
func TestZeroValuesWork(t *testing.T) {
	var s backoff.Sequence
	for i := range 3 {
		equal(t, time.Duration(0), s.Next(), "zero Sequence, retry %d", i)
	}
	s.Reset()
	equal(t, time.Duration(0), s.Next(), "zero Sequence after Reset")
	var p backoff.Schedule
	equal(t, time.Duration(0), p.Cap(), "zero Schedule's cap")
	equal(t, time.Duration(0), p.Delay(1000, time.Hour), "zero Schedule's Delay")
	equal(t, time.Second, p.Spread(time.Second, 3), "zero Schedule has no jitter to spread with")
	equal(t, "constant(0s)", p.String())
	seq := p.Sequence()
	equal(t, time.Duration(0), seq.Next(), "zero Schedule's Sequence")
}

// Sequence.Next derives a growing delay from the previous one; Delay computes it from the
// attempt number. The two must agree to the nanosecond on every kind of schedule, through the
// growth, at the cap and after a Reset.
func TestNextAgreesWithDelay(t *testing.T) {
	schedules := []func(...backoff.Option) backoff.Schedule{
		func(o ...backoff.Option) backoff.Schedule { return backoff.Constant(250*ms, o...) },
		func(o ...backoff.Option) backoff.Schedule { return backoff.Linear(7*ms, 100*ms, o...) },
		func(o ...backoff.Option) backoff.Schedule { return backoff.Linear(10*ms, 100*ms, o...) },
		func(o ...backoff.Option) backoff.Schedule { return backoff.Exponential(500*ms, 2, time.Minute, o...) },
		func(o ...backoff.Option) backoff.Schedule { return backoff.Exponential(3, 10, math.MaxInt64, o...) },
		func(o ...backoff.Option) backoff.Schedule { return backoff.Exponential(1, 3, 1<<62, o...) },
		func(o ...backoff.Option) backoff.Schedule {
			return backoff.Exponential(100*ms, 1.5, 30*time.Second, o...)
		},
		func(o ...backoff.Option) backoff.Schedule { return backoff.Exponential(1, 1+1e-9, 2, o...) },
		func(o ...backoff.Option) backoff.Schedule { return backoff.Exponential(0, 2, time.Second, o...) },
	}
	jitters := []backoff.Jitter{backoff.NoJitter, backoff.FullJitter, backoff.EqualJitter, backoff.DecorrelatedJitter}
	for _, build := range schedules {
		for _, j := range jitters {
			p := build(backoff.WithJitter(j), backoff.WithSeed(7))
			seq := p.Sequence()
			for round := range 2 {
				prev := time.Duration(0)
				for n := range 80 {
					got, want := seq.Next(), p.Delay(n, prev)
					equal(t, want, got, "%v round %d: Next() of retry %d", p, round, n)
					prev = got
				}
				seq.Reset()
			}
		}
	}
}
