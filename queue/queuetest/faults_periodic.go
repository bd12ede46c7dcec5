package queuetest

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/corral-go/corral/queue"
)

// faultPeriodicKilled: three worker processes run one schedule (queue.Periodic), with no
// leader; the one that enqueued the last tick is killed with SIGKILL. The next two ticks are
// each enqueued once, by a surviving process, within PeriodicBound of the tick; no tick is
// handled twice and none is skipped. The period is twice the bound, so that a late tick is
// never taken for the next.
func faultPeriodicKilled(r *faultRun) {
	const runners = 3
	bound := r.f.PeriodicBound()
	period := 2 * bound
	for range runners {
		r.startWorkerOf(period)
	}
	jobs := make(chan queue.Job[string], 100)
	c, err := r.q.Consume(r.ctx, func(_ context.Context, j queue.Job[string]) error {
		jobs <- j
		return nil
	}, queue.WithWorkers(2))
	if err != nil {
		r.t.Fatal(err)
	}
	defer func() { _, _ = c.Close(context.Background()) }()
	tc := &periodicCheck{r: r, jobs: jobs, period: period, seen: map[string]bool{}}
	tc.next() // possibly enqueued before every runner was up
	last := tc.next()
	victim, err := strconv.Atoi(strings.TrimPrefix(last.Payload, "w"))
	if err != nil || victim < 0 || victim >= runners {
		r.t.Fatalf("tick %s enqueued by %q, not a runner", last.ID, last.Payload)
	}
	r.killWorker(victim)
	var lates []time.Duration
	for range 2 {
		j := tc.next()
		late := tc.late(j)
		lates = append(lates, late.Round(time.Millisecond))
		if j.Payload == last.Payload || late > bound {
			r.t.Errorf("tick %s after the kill of w%d: enqueued by %s, %v after the tick; want another runner within %v",
				j.ID, victim, j.Payload, late, bound)
		}
	}
	r.stopWorkers()
	// Anything more, within a period, is a duplicate or a tick enqueued by no surviving
	// process after they stopped.
	quiet(r.t, jobs, period, "tick after the runners stopped")
	r.t.Logf("FAULTS PeriodicKilled: w%d killed after enqueueing %s; the next ticks enqueued %v after their tick (bound %v)",
		victim, last.ID, lates, bound)
}

// PeriodicBound is the bound faultPeriodicKilled holds a backend to: a tick is enqueued by a
// surviving process within one call timeout (its enqueue) and a second of scheduling of the
// tick, whichever process died.
func (f Faults) PeriodicBound() time.Duration { return f.CallTimeout + time.Second }

// periodicCheck reads faultPeriodicKilled's ticks in order.
type periodicCheck struct {
	r      *faultRun
	jobs   <-chan queue.Job[string]
	period time.Duration
	seen   map[string]bool
	prev   time.Time // the last tick read
}

// next returns the next tick's job: one not seen before, the tick after the previous one.
func (c *periodicCheck) next() queue.Job[string] {
	r := c.r
	r.t.Helper()
	t := time.NewTimer(4 * c.period)
	defer t.Stop()
	var j queue.Job[string]
	select {
	case j = <-c.jobs:
	case <-t.C:
		r.t.Fatalf("no tick within %v after %v", 4*c.period, c.prev)
	}
	tick := c.tick(j)
	switch {
	case c.seen[j.ID]:
		r.t.Errorf("tick %s handled twice", j.ID)
	case !c.prev.IsZero() && !tick.Equal(c.prev.Add(c.period)):
		r.t.Errorf("tick %s after %v: want the tick %v", j.ID, c.prev, c.prev.Add(c.period))
	}
	c.seen[j.ID] = true
	c.prev = tick
	return j
}

// tick returns the tick of j, from its ID.
func (c *periodicCheck) tick(j queue.Job[string]) time.Time {
	tick, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(j.ID, "tick@"))
	if err != nil {
		c.r.t.Fatalf("job %s: not a tick's: %v", j.ID, err)
	}
	return tick
}

// late is how long after its tick j was enqueued.
func (c *periodicCheck) late(j queue.Job[string]) time.Duration { return j.EnqueuedAt.Sub(c.tick(j)) }
