package backoff_test

import (
	"fmt"
	"time"

	"github.com/corral-go/corral/backoff"
)

// A retry loop makes one Sequence per call from a shared Schedule and asks it for each delay.
func ExampleSchedule_Sequence() {
	s := backoff.Exponential(100*time.Millisecond, 2, time.Second)
	seq := s.Sequence()
	for range 6 {
		fmt.Println(seq.Next())
	}
	// Output:
	// 100ms
	// 200ms
	// 400ms
	// 800ms
	// 1s
	// 1s
}

// A caller that does not loop in-process (a job queue) stores the attempt number and the
// last delay with the job and asks the schedule directly.
func ExampleSchedule_Delay() {
	p := backoff.Linear(time.Second, 3*time.Second)
	for attempt := range 4 {
		fmt.Println(attempt, p.Delay(attempt, 0))
	}
	// Output:
	// 0 1s
	// 1 2s
	// 2 3s
	// 3 3s
}

// Exponential doubles (factor 2) from the base up to the cap; jitter spreads the delays of many
// clients apart. Without jitter the schedule is exact, as here.
func ExampleExponential() {
	s := backoff.Exponential(100*time.Millisecond, 2, time.Second)
	fmt.Println(s)
	fmt.Println(s.Delays(6))
	// Output:
	// exponential(base=100ms, factor=2, cap=1s)
	// [100ms 200ms 400ms 800ms 1s 1s]
}

func ExampleLinear() {
	fmt.Println(backoff.Linear(time.Second, 3*time.Second).Delays(4))
	// Output: [1s 2s 3s 3s]
}

func ExampleConstant() {
	fmt.Println(backoff.Constant(250 * time.Millisecond).Delays(3))
	// Output: [250ms 250ms 250ms]
}

// Full jitter: each delay is drawn from [0, min(cap, base*2^n)]. The seed makes the
// schedule reproducible; production code leaves it out.
func ExampleFullJitter() {
	p := backoff.Exponential(100*time.Millisecond, 2, 2*time.Second,
		backoff.WithJitter(backoff.FullJitter), backoff.WithSeed(1))
	fmt.Println(p)
	for _, d := range p.Delays(6) {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output:
	// exponential(base=100ms, factor=2, cap=2s, jitter=full)
	// 93ms
	// 11ms
	// 399ms
	// 161ms
	// 931ms
	// 248ms
}

// Equal jitter: half of each un-jittered delay is kept, the other half is drawn.
func ExampleEqualJitter() {
	p := backoff.Exponential(100*time.Millisecond, 2, 2*time.Second,
		backoff.WithJitter(backoff.EqualJitter), backoff.WithSeed(1))
	fmt.Println(p)
	for _, d := range p.Delays(6) {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output:
	// exponential(base=100ms, factor=2, cap=2s, jitter=equal)
	// 97ms
	// 188ms
	// 220ms
	// 640ms
	// 858ms
	// 1.357s
}

// Decorrelated jitter: each delay is drawn from [base, 3*previous], capped.
func ExampleDecorrelatedJitter() {
	p := backoff.Exponential(100*time.Millisecond, 2, 2*time.Second,
		backoff.WithJitter(backoff.DecorrelatedJitter), backoff.WithSeed(1))
	fmt.Println(p)
	for _, d := range p.Delays(6) {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output:
	// exponential(base=100ms, factor=2, cap=2s, jitter=decorrelated)
	// 237ms
	// 458ms
	// 1.093s
	// 2s
	// 2s
	// 1.098s
}

// No jitter: the plain exponential schedule, for docs and tests.
func ExampleNoJitter() {
	p := backoff.Exponential(100*time.Millisecond, 2, 2*time.Second, backoff.WithJitter(backoff.NoJitter))
	fmt.Println(p, p.Delays(6))
	// Output: exponential(base=100ms, factor=2, cap=2s) [100ms 200ms 400ms 800ms 1.6s 2s]
}
