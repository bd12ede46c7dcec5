package queue

import (
	"sync/atomic"
	"time"
)

// clock reads the time for the hot paths (a job's enqueue time, a lease's
// start). time.Now reads the wall clock and the monotonic clock; the
// monotonic clock alone (time.Since) costs about half as much. So a clock
// keeps an anchor, a full reading, and returns the anchor plus the monotonic
// time elapsed since, taking a new anchor once a second: a reading is at
// most a second's clock adjustment away from time.Now. Its readings carry
// a monotonic reading, like time.Now's. The zero clock is ready to use.
type clock struct {
	anchor atomic.Pointer[time.Time]
}

// anchorFor is how long an anchor is used.
const anchorFor = time.Second

func (c *clock) now() time.Time {
	if a := c.anchor.Load(); a != nil {
		if d := time.Since(*a); d >= 0 && d < anchorFor {
			return a.Add(d)
		}
	}
	t := time.Now()
	c.anchor.Store(&t) // a racing store of another fresh anchor is harmless
	return t
}
