package queue

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/corral-go/corral/queue/internal/periodic"
	"github.com/corral-go/corral/queue/internal/storable"
)

// Schedule says when the ticks of a periodic job fall: Next returns the
// first tick strictly after t. Every process running a schedule must
// compute the same ticks: Next must be a function of t alone. A cron
// library's schedule has this method (github.com/robfig/cron/v3's
// cron.Schedule does), so it plugs in as it is; [Every] makes one of an
// interval. A zero time from Next ends the schedule.
type Schedule interface {
	Next(t time.Time) time.Time
}

// every is the Schedule of Every.
type every time.Duration

func (d every) Next(t time.Time) time.Time {
	return t.Truncate(time.Duration(d)).Add(time.Duration(d))
}

// Every returns the Schedule of a tick every d, at the multiples of d
// since the zero time (Truncate's), so that processes started at other
// times compute the same ticks: Every(time.Hour) ticks on the hour. It
// panics if d <= 0.
func Every(d time.Duration) Schedule {
	if d <= 0 {
		panic("queue: Every(" + d.String() + "): need a positive interval")
	}
	return every(d)
}

// PeriodicOption configures a periodic job (see [Queue.Periodic]).
type PeriodicOption func(*periodicOptions)

type periodicOptions struct {
	catchUp int
	jitter  time.Duration
}

// WithCatchUp sets what a periodic job does with the ticks it missed: those
// that fell while no process of this one ran the schedule (before it started,
// or while it was stalled, its clock jumped, or its enqueue kept failing).
// It enqueues the last n of them, oldest first: 0 (the default) skips them
// all, 1 runs the latest one, n runs each of the last n. Only ticks within the
// queue's dedup horizon of now are caught up: an older one cannot be told from
// one that another process enqueued and that was handled since. A missed
// tick that another process enqueued comes back as a duplicate: catching
// up runs nothing twice. It panics if n < 0.
func WithCatchUp(n int) PeriodicOption {
	if n < 0 {
		panic(fmt.Sprintf("queue: WithCatchUp(%d): need at least 0", n))
	}
	return func(o *periodicOptions) { o.catchUp = n }
}

// WithJitter delays the enqueue of each tick by an amount in [0, max) drawn
// from the schedule's name and the tick: the same for every process, so
// that they still enqueue each tick once, and different from tick to tick
// and from schedule to schedule, so that schedules sharing a tick (every
// hour on the hour) do not all enqueue at once. It panics if max < 0.
func WithJitter(max time.Duration) PeriodicOption {
	if max < 0 {
		panic("queue: WithJitter(" + max.String() + "): negative duration")
	}
	return func(o *periodicOptions) { o.jitter = max }
}

// PeriodicOutcome is what became of a periodic job's tick in this process.
type PeriodicOutcome string

// The outcomes of a tick.
const (
	// TickEnqueued: this process enqueued the tick's job.
	TickEnqueued PeriodicOutcome = "enqueued"
	// TickDuplicate: the tick's job was enqueued already (ErrDuplicate),
	// by another process running the schedule.
	TickDuplicate PeriodicOutcome = "duplicate"
	// TickMissed: the tick's horizon passed before this process could
	// enqueue it (see Queue.Periodic). The ticks the catch-up policy skips
	// (WithCatchUp) count in PeriodicStats.Missed, never as the last.
	TickMissed PeriodicOutcome = "missed"
	// TickFailed: the enqueue failed (the error is in PeriodicStats.Err),
	// and kept failing until the next tick was due or the tick fell out of
	// the dedup horizon.
	TickFailed PeriodicOutcome = "failed"
)

// PeriodicStats is a periodic job's state in this process (see
// [Stats.Periodic] and [Periodic.Stats]).
type PeriodicStats struct {
	// Name is the schedule's name.
	Name string
	// Next is the next tick, and NextAt when this process enqueues it (the
	// tick and its jitter); both zero once the schedule ended or stopped.
	Next, NextAt time.Time
	// Last is the last tick this process dealt with, LastID its job's ID
	// and LastOutcome what became of it; zero before the first.
	Last        time.Time
	LastID      string
	LastOutcome PeriodicOutcome
	// Err is the error of the last tick that failed (nil if none did).
	Err error
	// Enqueued, Duplicates, Missed and Failed count the ticks by outcome.
	Enqueued, Duplicates, Missed, Failed uint64
}

// Periodic is a periodic job of a queue, made by [Queue.Periodic]. It runs
// until Stop or the queue's Close.
type Periodic struct {
	r *periodic.Runner
}

// Periodic runs a periodic job on q: at each tick of s, it enqueues
// payload(tick) with the ID name@tick (the tick in UTC, RFC 3339 with
// nanoseconds). Every process of the queue may run the same schedule, with
// no leader and no coordination: they compute the same ticks and IDs, so
// the first process to enqueue a tick stores its job, and the others get
// ErrDuplicate (counted as TickDuplicate here, and in Stats.Duplicates). A
// tick is enqueued once as long as every process enqueues it within the
// queue's dedup horizon of the tick ([WithDedupHorizon]; the processes'
// clocks must agree to well within it), which is why Periodic refuses a
// horizon no longer than the schedule's period (the longest of its next
// four gaps between ticks) with an error, as it refuses a jitter
// ([WithJitter]) no shorter than the period. A tick is never enqueued once the
// horizon has passed since it fell: it is missed. A process that was
// running the schedule and died takes nothing with it: the others enqueue
// the next tick on time. An enqueue that fails with ErrUnavailable is
// retried, with backoff, until the next tick is due.
//
// payload runs on the Periodic's goroutine, once per tick this process
// enqueues (or tries to); a panic in it fails the tick (TickFailed, with a
// *PanicError). The Periodic's goroutine belongs to q: Stop ends it, and
// q's Close stops it before closing the consumers. Periodic returns ErrClosed if q is
// closed. An empty name, or one that makes an ID the queue refuses, is an
// error. It panics if s or payload is nil.
func (q *Queue[T]) Periodic(name string, s Schedule, payload func(tick time.Time) T, opts ...PeriodicOption) (*Periodic, error) {
	switch {
	case q.backend == nil:
		panic(zeroQueue)
	case s == nil:
		panic("queue: Periodic with a nil Schedule")
	case payload == nil:
		panic("queue: Periodic with a nil payload function")
	}
	var o periodicOptions
	for _, opt := range opts {
		if opt == nil {
			panic("queue: nil option")
		}
		opt(&o)
	}
	now := q.clk.Now()
	if err := periodic.Check(name, s, now, q.horizon, o.jitter, func(id string) error { return storable.Check("job ID", id) }); err != nil {
		return nil, err
	}
	p := &Periodic{}
	forget := func() { // on p's goroutine as it ends
		q.mu.Lock()
		delete(q.periodics, p)
		q.mu.Unlock()
	}
	p.r = periodic.New(periodic.Config{Name: name, Schedule: s, Horizon: q.horizon, CatchUp: o.catchUp,
		Jitter: o.jitter, Now: q.clk.Now, Enqueue: q.tickEnqueuer(payload), Done: forget}, now)
	q.mu.Lock()
	if q.closed.Load() {
		q.mu.Unlock()
		return nil, ErrClosed
	}
	if q.periodics == nil {
		q.periodics = make(map[*Periodic]struct{})
	}
	q.periodics[p] = struct{}{}
	q.mu.Unlock()
	p.r.Start(now)
	return p, nil
}

// tickEnqueuer returns the function that enqueues a tick's job, made by
// payload. A panic in payload fails the tick with a *PanicError.
func (q *Queue[T]) tickEnqueuer(payload func(time.Time) T) func(context.Context, time.Time, string) error {
	return func(ctx context.Context, t time.Time, id string) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &PanicError{Where: "Periodic payload", Value: v, Stack: debug.Stack()}
			}
		}()
		_, err = q.Enqueue(ctx, payload(t), WithID(id))
		return err
	}
}

// periodicStats returns the stats of q's running periodic jobs, by name.
func (q *Queue[T]) periodicStats() []PeriodicStats {
	q.mu.Lock()
	ps := make([]*Periodic, 0, len(q.periodics))
	for p := range q.periodics {
		ps = append(ps, p)
	}
	q.mu.Unlock()
	if len(ps) == 0 {
		return nil
	}
	out := make([]PeriodicStats, len(ps))
	for i, p := range ps {
		out[i] = p.Stats()
	}
	slices.SortStableFunc(out, func(a, b PeriodicStats) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Stop stops the periodic job and returns once its goroutine has ended: an
// enqueue in progress completes first (a broker backend bounds it by its
// call timeout), and a retry waiting is abandoned, its tick counted as
// failed. It is idempotent.
func (p *Periodic) Stop() { p.r.Stop() }

// Stats returns the periodic job's state in this process.
func (p *Periodic) Stats() PeriodicStats {
	s := p.r.Stats()
	return PeriodicStats{Name: s.Name, Next: s.Next, NextAt: s.NextAt, Last: s.Last, LastID: s.LastID,
		LastOutcome: tickOutcomes[s.LastOutcome], Err: s.Err,
		Enqueued: s.Enqueued, Duplicates: s.Duplicates, Missed: s.Missed, Failed: s.Failed}
}

// tickOutcomes names the outcomes of periodic.Outcome.
var tickOutcomes = [...]PeriodicOutcome{periodic.None: "", periodic.Enqueued: TickEnqueued,
	periodic.Duplicate: TickDuplicate, periodic.Missed: TickMissed, periodic.Failed: TickFailed}
