package queuetest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/corral-go/corral/queue"
)

// testRateLimit holds a backend to driver.RateLimiter: two consumers of one queue (as two
// processes would be), each with the queue's limit of 3 starts per 10 units and 4 workers,
// start 12 jobs in 4 waves: no span of 10 units holds more than 3 starts (in real time, give
// or take half of it: a start is dated as its handler runs), and the k-th start comes no
// earlier than wave k/3 (on the virtual clock, exactly then: the limit holds nothing back
// beyond it).
func testRateLimit(e *env) {
	const n, jobs = 3, 12
	per := 10 * e.unit
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	for i := range jobs {
		e.enqueue(q, "job", queue.WithID("r"+string(rune('a'+i))))
	}
	var (
		mu     sync.Mutex
		starts []time.Time
	)
	start := time.Now()
	h := func(context.Context, queue.Job[string]) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil
	}
	e.consume(q, h, queue.WithRateLimit(n, per))
	e.consume(q, h, queue.WithRateLimit(n, per))
	for range jobs {
		recv(e, ev.acked, "a job acked")
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	// In real time a start is dated as its handler runs, some time after the backend gave it
	// (a loaded machine delays that by tens of milliseconds): allow half a window. A backend
	// that did not limit at all would start every job within milliseconds.
	slack := time.Duration(0)
	if !e.virtual {
		slack = per / 2
	}
	for i := n; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-n]); d < per-slack {
			e.Errorf("starts %d and %d %v apart: more than %d starts within %v", i-n, i, d, n, per)
		}
	}
	for i, s := range starts {
		want := time.Duration(i/n) * per
		e.elapsedLate("start "+string(rune('0'+i)), s.Sub(start), want-slack, 0)
	}
}
