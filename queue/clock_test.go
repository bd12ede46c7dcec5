package queue

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestClockFollowsTime(t *testing.T) {
	// In a bubble, time.Now has no monotonic reading, so each reading is a
	// full one; the anchor logic must still give exactly time.Now.
	synctest.Test(t, func(t *testing.T) {
		var c clock
		for _, step := range []time.Duration{0, time.Millisecond, 999 * time.Millisecond, time.Second, time.Hour} {
			time.Sleep(step)
			if got, want := c.now(), time.Now(); !got.Equal(want) {
				t.Fatalf("after %v: clock says %v, time.Now %v", step, got, want)
			}
		}
	})
}

func TestClockOnTheRealClock(t *testing.T) {
	// Outside a bubble the readings come from the anchor and the monotonic
	// clock: they never go backwards, stay between two time.Now readings,
	// and the anchor is replaced once it is older than anchorFor.
	var c clock
	prev := c.now()
	first := c.anchor.Load()
	for range 1000 {
		before := time.Now()
		got := c.now()
		after := time.Now()
		if got.Before(prev) || got.Before(before) || got.After(after) {
			t.Fatalf("reading %v outside [%v, %v] or before the previous %v", got, before, after, prev)
		}
		prev = got
	}
	old := first.Add(-2 * anchorFor)
	c.anchor.Store(&old)
	if got := c.now(); c.anchor.Load() == &old || got.Sub(old) < 2*anchorFor {
		t.Fatalf("an anchor older than %v was kept (reading %v, anchor %v)", anchorFor, got, old)
	}
}
