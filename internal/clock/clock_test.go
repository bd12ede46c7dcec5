package clock

import (
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEpochSinceIsElapsedTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := Start()
		if got := e.Since(); got != 0 {
			t.Fatalf("Since at once = %v; want 0", got)
		}
		for _, step := range []time.Duration{time.Nanosecond, time.Millisecond, time.Hour} {
			before := e.Since()
			time.Sleep(step)
			if got := e.Since() - before; got != step {
				t.Fatalf("after sleeping %v, Since grew by %v", step, got)
			}
		}
		// An Epoch is a value: a copy measures from the same origin.
		c := e
		if c.Since() != e.Since() {
			t.Fatalf("a copy of an Epoch measures %v; the original %v", c.Since(), e.Since())
		}
	})
}

func TestEpochAtIsSinceAsOfAReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := Start()
		time.Sleep(time.Hour)
		var c Anchored
		r := c.Now()
		time.Sleep(time.Minute)
		if got := e.At(r); got != time.Hour {
			t.Fatalf("At a reading taken an hour after Start = %v; want 1h", got)
		}
		if got, want := e.At(time.Now()), e.Since(); got != want {
			t.Fatalf("At(time.Now()) = %v; Since = %v", got, want)
		}
	})
}

func TestAnchoredFollowsTime(t *testing.T) {
	// In a bubble, time.Now has no monotonic reading, so each reading is a full one; the
	// anchor logic must still give exactly time.Now.
	synctest.Test(t, func(t *testing.T) {
		var c Anchored
		for _, step := range []time.Duration{0, time.Millisecond, 999 * time.Millisecond, time.Second, time.Hour} {
			time.Sleep(step)
			if got, want := c.Now(), time.Now(); !got.Equal(want) {
				t.Fatalf("after %v: clock says %v, time.Now %v", step, got, want)
			}
		}
	})
}

func TestAnchoredOnTheRealClock(t *testing.T) {
	// Outside a bubble the readings come from the anchor and the monotonic clock: they never
	// go backwards, stay between two time.Now readings, and the anchor is replaced once it
	// is older than AnchorFor.
	var c Anchored
	prev := c.Now()
	first := c.anchor.Load()
	for range 1000 {
		before := time.Now()
		got := c.Now()
		after := time.Now()
		if got.Before(prev) || got.Before(before) || got.After(after) {
			t.Fatalf("reading %v outside [%v, %v] or before the previous %v", got, before, after, prev)
		}
		prev = got
	}
	old := first.Add(-2 * AnchorFor)
	c.anchor.Store(&old)
	if got := c.Now(); c.anchor.Load() == &old || got.Sub(old) < 2*AnchorFor {
		t.Fatalf("an anchor older than %v was kept (reading %v, anchor %v)", AnchorFor, got, old)
	}
}
