// Package periodic is the mechanism behind queue.Queue.Periodic: the walk
// of a schedule's ticks, the catch-up of missed ones, the jitter every
// process agrees on, and the loop that enqueues each tick through a
// function the queue gives it and keeps the tick's outcome.
//
// A Runner is made by New and started once by Start; its goroutine ends at
// Stop or when the schedule does, and Stop returns only after it has. A
// Runner is safe for concurrent use.
package periodic

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/driver"
)

// Schedule says when the ticks fall: Next returns the first tick strictly
// after t, or the zero time once the schedule ends (queue.Schedule).
type Schedule interface {
	Next(t time.Time) time.Time
}

// Outcome is what became of a tick (see queue.PeriodicOutcome): None
// before the first, then Enqueued, Duplicate, Missed or Failed.
type Outcome uint8

// The outcomes of a tick.
const (
	None Outcome = iota
	Enqueued
	Duplicate
	Missed
	Failed
)

// Stats is a Runner's state (queue.PeriodicStats, field for field).
type Stats struct {
	Name                                 string
	Next, NextAt                         time.Time
	Last                                 time.Time
	LastID                               string
	LastOutcome                          Outcome
	Err                                  error
	Enqueued, Duplicates, Missed, Failed uint64
}

// Config is what a Runner runs.
type Config struct {
	Name     string
	Schedule Schedule
	// Horizon is the queue's dedup horizon: a tick is enqueued only within
	// it of the tick, and only the ticks within it are caught up.
	Horizon time.Duration
	// CatchUp is how many of the ticks missed before Start to enqueue,
	// the latest ones; Jitter is the bound of each tick's delay.
	CatchUp int
	Jitter  time.Duration
	// Now reads the clock the schedule runs on.
	Now func() time.Time
	// Enqueue enqueues the job of tick t under id. It is called on the
	// Runner's goroutine, with a ctx that Stop does not cancel. An error
	// matching driver.ErrDuplicate makes the tick a Duplicate, one
	// matching driver.ErrUnavailable is retried with backoff, any other
	// fails the tick.
	Enqueue func(ctx context.Context, t time.Time, id string) error
	// Done, if not nil, is called on the Runner's goroutine as it ends,
	// before Stop returns.
	Done func()
}

// ID is the job ID of the tick t of the schedule name: name@tick, the tick
// in UTC, RFC 3339 with nanoseconds.
func ID(name string, t time.Time) string {
	return name + "@" + t.UTC().Format(time.RFC3339Nano)
}

// Check checks a schedule's name, and s at now against the dedup horizon
// and the jitter: both must outlast the schedule's period (the longest of
// its next four gaps between ticks), the horizon so that each tick's ID
// stays taken for longer, the jitter the other way round so that ticks are
// enqueued in order. checkID checks the first tick's job ID.
func Check(name string, s Schedule, now time.Time, horizon, jitter time.Duration, checkID func(string) error) error {
	if name == "" {
		return errors.New("queue: Periodic: empty name")
	}
	t := s.Next(now)
	if err := checkID(ID(name, t)); err != nil {
		return fmt.Errorf("queue: Periodic %q: %w", name, err)
	}
	var period time.Duration
	for range 4 {
		if t.IsZero() {
			break
		}
		n := s.Next(t)
		if !n.IsZero() && n.Sub(t) > period {
			period = n.Sub(t)
		}
		t = n
	}
	if jitter > 0 && jitter >= period {
		return fmt.Errorf("queue: Periodic %q: a jitter of %v is not shorter than the schedule's period %v: ticks would be enqueued out of order",
			name, jitter, period)
	}
	if horizon <= period {
		return fmt.Errorf("queue: Periodic %q: the dedup horizon %v is not longer than the schedule's period %v: each tick's ID must stay taken for longer (see WithDedupHorizon)",
			name, horizon, period)
	}
	return nil
}

// Runner runs one schedule.
type Runner struct {
	c      Config
	ctx    context.Context // ends at Stop
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has ended

	mu sync.Mutex // guards st
	st Stats
}

// New returns a Runner of c, not started, whose Stats announce the first
// tick after now.
func New(c Config, now time.Time) *Runner {
	r := &Runner{c: c, done: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.st.Name = c.Name
	if t := c.Schedule.Next(now); !t.IsZero() { // what run announces first, known now
		r.st.Next, r.st.NextAt = t, t.Add(r.jitter(t))
	}
	return r
}

// Start starts r's goroutine, which runs the schedule from start. It must
// be called once, before Stop.
func (r *Runner) Start(start time.Time) { go r.run(start) }

// Stop stops r and returns once its goroutine has ended: an enqueue in
// progress completes first, and a retry waiting is abandoned, its tick
// counted as failed. It is idempotent.
func (r *Runner) Stop() {
	r.cancel()
	<-r.done
}

// Stats returns r's state.
func (r *Runner) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// run runs the schedule from start until Stop or the schedule's end.
func (r *Runner) run(start time.Time) {
	defer func() {
		r.mu.Lock()
		r.st.Next, r.st.NextAt = time.Time{}, time.Time{}
		r.mu.Unlock()
		if r.c.Done != nil {
			r.c.Done()
		}
		close(r.done)
	}()
	// The ticks that fell before start, within the horizon: the catch-up
	// policy's to enqueue (another process may have).
	caught, _ := r.ticks(start.Add(-r.c.Horizon), start, r.c.CatchUp)
	last := r.settle(caught, 0, time.Time{})
	if last.IsZero() {
		last = start
	}
	for {
		t := r.c.Schedule.Next(last)
		if t.IsZero() {
			return
		}
		at := t.Add(r.jitter(t))
		r.mu.Lock()
		r.st.Next, r.st.NextAt = t, at
		r.mu.Unlock()
		if !r.sleep(at.Sub(r.c.Now())) {
			return
		}
		// Normally the one tick t; more if this process stalled or its
		// clock jumped: the last is current, the others were missed.
		due, skipped := r.ticks(last, r.c.Now(), r.c.CatchUp+1)
		if len(due) == 0 { // the clock went back: wait again
			continue
		}
		last = r.settle(due[:len(due)-1], skipped, due[len(due)-1])
	}
}

// sleep waits for d, and reports false if Stop came first.
func (r *Runner) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-r.ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// ticks returns the last keep ticks after from whose enqueue time (the tick
// and its jitter) is at or before now, in order, and how many such ticks
// came before them.
func (r *Runner) ticks(from, now time.Time, keep int) (ts []time.Time, skipped uint64) {
	if keep == 0 {
		return nil, 0
	}
	s := r.c.Schedule
	for t := s.Next(from); !t.IsZero() && !t.Add(r.jitter(t)).After(now); t = s.Next(t) {
		if len(ts) == keep {
			ts = append(ts[:0], ts[1:]...)
			skipped++
		}
		ts = append(ts, t)
	}
	return ts, skipped
}

// settle deals with the ticks missed that the catch-up policy enqueues
// (oldest first, after skipped ones it skips), then with the tick current
// if it is not zero, and returns the last tick it dealt with (zero if
// none).
func (r *Runner) settle(missed []time.Time, skipped uint64, current time.Time) time.Time {
	if skipped > 0 {
		r.mu.Lock()
		r.st.Missed += skipped
		r.mu.Unlock()
	}
	var last time.Time
	for _, t := range missed {
		r.tick(t)
		last = t
	}
	if !current.IsZero() {
		r.tick(current)
		last = current
	}
	return last
}

// retries spaces the retries of a tick's enqueue.
var retries = backoff.Exponential(50*time.Millisecond, 2, 5*time.Second,
	backoff.WithJitter(backoff.EqualJitter))

// tick enqueues the job of tick t, retrying an unavailable backend until
// the tick after t is due, and records the outcome.
func (r *Runner) tick(t time.Time) {
	until := t.Add(r.c.Horizon)
	if n := r.c.Schedule.Next(t); !n.IsZero() && n.Add(r.jitter(n)).Before(until) {
		until = n.Add(r.jitter(n))
	}
	id := ID(r.c.Name, t)
	delays := retries.Sequence()
	for {
		if !r.c.Now().Before(t.Add(r.c.Horizon)) {
			r.record(t, Missed, nil) // too late to tell it from a tick handled since
			return
		}
		// Not abandoned at Stop: a tick being enqueued is, or is not, and
		// says which in the stats. (The backend bounds its call.)
		err := r.c.Enqueue(context.WithoutCancel(r.ctx), t, id)
		switch {
		case err == nil:
			r.record(t, Enqueued, nil)
			return
		case errors.Is(err, driver.ErrDuplicate):
			r.record(t, Duplicate, nil)
			return
		case !errors.Is(err, driver.ErrUnavailable):
			r.record(t, Failed, err)
			return
		}
		wait := delays.Next()
		if !r.c.Now().Add(wait).Before(until) || !r.sleep(wait) {
			r.record(t, Failed, err)
			return
		}
	}
}

// record records the outcome o of tick t (err if it failed).
func (r *Runner) record(t time.Time, o Outcome, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Last, r.st.LastID, r.st.LastOutcome = t, ID(r.c.Name, t), o
	switch o {
	case Enqueued:
		r.st.Enqueued++
	case Duplicate:
		r.st.Duplicates++
	case Missed:
		r.st.Missed++
	default:
		r.st.Failed++
		r.st.Err = err
	}
}

// jitter is the delay of tick t's enqueue: a hash of the schedule's name
// and t, the same in every process.
func (r *Runner) jitter(t time.Time) time.Duration {
	if r.c.Jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(ID(r.c.Name, t)))
	return time.Duration(h.Sum64() % uint64(r.c.Jitter))
}
