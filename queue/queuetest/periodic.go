package queuetest

import (
	"context"
	"time"

	"github.com/corral-go/corral/queue"
)

// testPeriodicOnce holds a backend to what periodic jobs need of it (queue.Periodic): three
// runners of one schedule, as three processes would run it, racing to enqueue each tick with
// the tick's ID, store each tick's job once (the others get ErrDuplicate, which needs
// Enqueue's dedup to be atomic), and the job is enqueued at its tick (on the virtual clock,
// exactly; in real time, within 5 units). Once the runners stop, every job one of them
// enqueued is handled exactly once, and nothing else is.
func testPeriodicOnce(e *env) {
	const runners, ticks = 3, 4
	period := 5 * e.unit
	q := e.newQueue(queue.WithDedupHorizon(50 * e.unit))
	got := make(chan queue.Job[string], 100)
	e.consume(q, func(_ context.Context, j queue.Job[string]) error {
		got <- j
		return nil
	})
	var ps []*queue.Periodic
	for range runners {
		p, err := q.Periodic("tick", queue.Every(period), func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) })
		if err != nil {
			e.Fatalf("Periodic: %v", err)
		}
		ps = append(ps, p)
	}
	tc := tickCheck{e: e, period: period, seen: map[string]bool{}}
	check := tc.check
	for range ticks {
		check(recv(e, got, "a tick's job"))
	}
	var enqueued uint64
	for _, p := range ps {
		p.Stop()
		st := p.Stats()
		enqueued += st.Enqueued
		if st.Failed != 0 || st.Missed != 0 || st.Enqueued+st.Duplicates < ticks-1 {
			e.Errorf("runner stats %+v: want no failed or missed tick, at least %d dealt with", st, ticks-1)
		}
	}
	for uint64(len(tc.seen)) < enqueued {
		check(recv(e, got, "a tick's job"))
	}
	quiet(e, got, 3*e.unit, "job after the runners stopped")
	if uint64(len(tc.seen)) != enqueued {
		e.Errorf("%d ticks handled, the runners enqueued %d", len(tc.seen), enqueued)
	}
}

// tickCheck checks the jobs of testPeriodicOnce's ticks, and records them in seen.
type tickCheck struct {
	e      *env
	period time.Duration
	seen   map[string]bool
}

// check checks j: the job of a tick on a multiple of the period, with the tick's ID, handled
// once, enqueued at its tick (in real time, within 5 units).
func (c *tickCheck) check(j queue.Job[string]) {
	e := c.e
	e.Helper()
	tick, err := time.Parse(time.RFC3339Nano, j.Payload)
	switch {
	case err != nil || j.ID != "tick@"+j.Payload || !tick.Equal(tick.Truncate(c.period)):
		e.Errorf("job %s, payload %q: want the ID tick@ its payload, a tick on a multiple of %v", j.ID, j.Payload, c.period)
	case c.seen[j.ID]:
		e.Errorf("tick %s handled twice", j.ID)
	}
	c.seen[j.ID] = true
	e.elapsedLate("tick "+j.Payload+" enqueued", j.EnqueuedAt.Sub(tick), 0, 0)
	if !e.virtual && j.EnqueuedAt.Sub(tick) > 5*e.unit {
		e.Errorf("tick %s enqueued %v after it, want within %v", j.Payload, j.EnqueuedAt.Sub(tick), 5*e.unit)
	}
}
