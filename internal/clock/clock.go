// Package clock is how corral's packages read time on their hot paths.
//
// It offers two readers, both with a ready-to-use zero value except where said:
//   - Epoch: a time origin taken once (Start) and the monotonic time elapsed since it
//     (Since), as a time.Duration. For measuring durations and scheduling relative to the
//     start of a long-lived object: pool's Stats timings and idle timeouts, retry.Budget's
//     floor. One time.Since per reading, no wall clock. The zero Epoch is not started: Since
//     then measures from the zero time.Time, so call Start.
//   - Anchored: the current time as a time.Time, wall and monotonic, without a wall-clock
//     read per call: it keeps an anchor (a full time.Now reading) and returns the anchor plus
//     the monotonic time elapsed since, taking a new anchor once a second (AnchorFor). A
//     reading is at most a second's wall-clock adjustment away from time.Now. For timestamps
//     that are stored or compared with times from elsewhere (queue's enqueue times and
//     lease starts). Anchored is safe for
//     concurrent use; the zero Anchored is ready to use.
//
// Both read the real clock: inside a testing/synctest bubble they read the bubble's fake
// time, like time.Now, so code that uses them is tested with synctest.
package clock

import (
	"sync/atomic"
	"time"
)

// An Epoch is a time origin. It is a value: copy it freely.
type Epoch struct{ t time.Time }

// Start returns an epoch that begins now.
func Start() Epoch { return Epoch{time.Now()} }

// Since returns the monotonic time elapsed since e began. It does not go backwards while the
// process runs, unlike a difference of wall-clock readings.
func (e Epoch) Since() time.Duration { return time.Since(e.t) }

// At returns the time elapsed from e's beginning to t, a reading of the clock taken since:
// e.Since() as it was when t was read, without reading the clock again. With t from time.Now
// (or Anchored.Now) it is monotonic as Since is.
func (e Epoch) At(t time.Time) time.Duration { return t.Sub(e.t) }

// Anchored reads the current time cheaply; see the package doc. It must not be copied after
// first use.
type Anchored struct {
	anchor atomic.Pointer[time.Time]
}

// AnchorFor is how long an Anchored uses an anchor before it takes a new one.
const AnchorFor = time.Second

// Now returns the current time: the anchor plus the monotonic time elapsed since it was taken,
// or a fresh time.Now reading (the new anchor) once the anchor is AnchorFor old. The reading
// carries a monotonic reading, like time.Now's.
func (c *Anchored) Now() time.Time {
	if a := c.anchor.Load(); a != nil {
		if d := time.Since(*a); d >= 0 && d < AnchorFor {
			return a.Add(d)
		}
	}
	t := time.Now()
	c.anchor.Store(&t) // a racing store of another fresh anchor is harmless
	return t
}
