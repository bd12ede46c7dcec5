// Package sample picks which events of a stream to measure, for the latency distributions
// that pool and queue keep without being asked to: one event in Mean on average, in gaps that
// vary, so that a stream that repeats itself (every 64th task a large one, say) is not
// sampled in step with its period.
//
// A Sampler takes the first event it is offered, then skips a pseudo-random number of events,
// from 0 to 2*(Mean-1), before it takes the next: the gaps come from a fixed sequence
// (xorshift32 from a constant seed), so a run is reproducible, and they average Mean-1, so
// that one event in Mean is taken. The zero Sampler is ready to use; it is not safe for
// concurrent use (each owner guards its own, or keeps one per goroutine).
package sample

// Mean is how many events a Sampler is offered, on average, for each one it takes.
const Mean = 64

// seed starts the sequence of gaps (any non-zero value does).
const seed = 0x9E3779B9

// A Sampler decides which events to measure; see the package doc.
type Sampler struct {
	skip  uint32 // events still to skip before the next one taken
	state uint32 // xorshift32 state; 0 until the first gap is drawn
}

// Take reports whether the event now offered is to be measured. It costs a decrement and a
// branch for an event skipped, and is inlined where it is called.
func (s *Sampler) Take() bool {
	if s.skip > 0 {
		s.skip--
		return false
	}
	return s.take()
}

// take draws the gap to the next event taken, and takes this one. It is kept out of line, so
// that Take, which calls it for one event in Mean, stays small enough to be inlined.
//
//go:noinline
func (s *Sampler) take() bool {
	x := s.state
	if x == 0 {
		x = seed
	}
	x ^= x << 13
	x ^= x >> 17
	x ^= x << 5
	s.state = x
	s.skip = x % (2*Mean - 1) // 0 to 2*(Mean-1): Mean-1 on average
	return true
}
