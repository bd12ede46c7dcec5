// Package backoff computes the delay to wait before each retry.
//
// A [Schedule] is a pure description of the delays before each retry: constant, linear or
// exponential growth from a base delay up to a cap, with no jitter or with the full, equal or
// decorrelated jitter of the AWS article "Exponential Backoff and Jitter":
//
//	t            = min(cap, base*factor^n)            // the un-jittered delay of retry n
//	full         = U[0, t]
//	equal        = t/2 + U[0, t/2]
//	decorrelated = min(cap, U[base, prev*3])           // prev starts at base
//
// A Schedule is an immutable value and is safe for concurrent use: any number of goroutines may
// share one. State that belongs to one retry loop (the attempt number and, for decorrelated
// jitter, the previous delay) lives in a [Sequence], a small value each loop makes with
// [Schedule.Sequence]. A caller that does not loop in-process (a job queue that persists the
// attempt number with the job) calls [Schedule.Delay] with the attempt number and the previous
// delay instead.
//
// Every delay is in [0, cap] for every attempt number: growth saturates at the cap, it never
// overflows or turns negative, and a schedule that does not grow (a zero base, a factor of 1)
// stays at its base for every attempt up to math.MaxInt. Invalid parameters (a negative base,
// a factor below 1, a cap below the base, an unknown jitter, a nil source or Option) are
// programmer errors and panic when the schedule is built, in the caller's goroutine, with a
// message that names the call: "backoff: Linear(-1s, 1s): negative base". The zero Schedule and
// the zero Sequence are ready to use: every delay is zero.
//
// Randomness comes from the runtime's fast, concurrency-safe generator. [WithSeed] replaces
// it with a seeded one, so a schedule is reproducible (for tests and docs): with a seed,
// retry n with previous delay prev always gets the same delay. [WithSource] injects any
// rand.Source instead. [Schedule.Delays] lists the first delays of a schedule, and String
// describes the schedule.
//
//	p := backoff.Exponential(100*time.Millisecond, 2, 10*time.Second, backoff.WithJitter(backoff.FullJitter))
//	seq := p.Sequence()
//	for ... {
//		time.Sleep(seq.Next())
//	}
package backoff
