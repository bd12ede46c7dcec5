package queue

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/corral-go/corral/backoff"
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
	name   string
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	st PeriodicStats
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
	if err := q.checkPeriodic(name, s, now, o.jitter); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Periodic{name: name, cancel: cancel, done: make(chan struct{})}
	p.st.Name = name
	r := &periodicRun[T]{q: q, p: p, s: s, payload: payload, o: o}
	if t := s.Next(now); !t.IsZero() { // what run announces first, known now
		p.st.Next, p.st.NextAt = t, t.Add(r.jitter(t))
	}
	q.mu.Lock()
	if q.closed.Load() {
		q.mu.Unlock()
		cancel()
		return nil, ErrClosed
	}
	if q.periodics == nil {
		q.periodics = make(map[*Periodic]struct{})
	}
	q.periodics[p] = struct{}{}
	q.mu.Unlock()
	go r.run(ctx, now)
	return p, nil
}

// checkPeriodic checks a periodic job's name, and its schedule s at now
// against q's dedup horizon and its jitter (see Periodic).
func (q *Queue[T]) checkPeriodic(name string, s Schedule, now time.Time, jitter time.Duration) error {
	if name == "" {
		return errors.New("queue: Periodic: empty name")
	}
	t := s.Next(now)
	if err := checkStorable("job ID", tickID(name, t)); err != nil {
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
	if q.horizon <= period {
		return fmt.Errorf("queue: Periodic %q: the dedup horizon %v is not longer than the schedule's period %v: each tick's ID must stay taken for longer (see WithDedupHorizon)",
			name, q.horizon, period)
	}
	return nil
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

// tickID is the job ID of the tick t of the schedule name.
func tickID(name string, t time.Time) string {
	return name + "@" + t.UTC().Format(time.RFC3339Nano)
}

// Stop stops the periodic job and returns once its goroutine has ended: an
// enqueue in progress completes first (a broker backend bounds it by its
// call timeout), and a retry waiting is abandoned, its tick counted as
// failed. It is idempotent.
func (p *Periodic) Stop() {
	p.cancel()
	<-p.done
}

// Stats returns the periodic job's state in this process.
func (p *Periodic) Stats() PeriodicStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st
}

// periodicRun is the goroutine of a Periodic.
type periodicRun[T any] struct {
	q       *Queue[T]
	p       *Periodic
	s       Schedule
	payload func(time.Time) T
	o       periodicOptions
}

// run runs the schedule from start until ctx ends or the schedule does.
func (r *periodicRun[T]) run(ctx context.Context, start time.Time) {
	defer func() {
		r.p.mu.Lock()
		r.p.st.Next, r.p.st.NextAt = time.Time{}, time.Time{}
		r.p.mu.Unlock()
		r.q.mu.Lock()
		delete(r.q.periodics, r.p)
		r.q.mu.Unlock()
		close(r.p.done)
	}()
	// The ticks that fell before start, within the horizon: the catch-up
	// policy's to enqueue (another process may have).
	caught, _ := r.ticks(start.Add(-r.q.horizon), start, r.o.catchUp)
	last := r.settle(ctx, caught, 0, time.Time{})
	if last.IsZero() {
		last = start
	}
	for {
		t := r.s.Next(last)
		if t.IsZero() {
			return
		}
		at := t.Add(r.jitter(t))
		r.p.mu.Lock()
		r.p.st.Next, r.p.st.NextAt = t, at
		r.p.mu.Unlock()
		timer := time.NewTimer(at.Sub(r.q.clk.Now()))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		// Normally the one tick t; more if this process stalled or its
		// clock jumped: the last is current, the others were missed.
		due, skipped := r.ticks(last, r.q.clk.Now(), r.o.catchUp+1)
		if len(due) == 0 { // the clock went back: wait again
			continue
		}
		last = r.settle(ctx, due[:len(due)-1], skipped, due[len(due)-1])
	}
}

// ticks returns the last keep ticks after from whose enqueue time (the tick
// and its jitter) is at or before now, in order, and how many such ticks
// came before them.
func (r *periodicRun[T]) ticks(from, now time.Time, keep int) (ts []time.Time, skipped uint64) {
	if keep == 0 {
		return nil, 0
	}
	for t := r.s.Next(from); !t.IsZero() && !t.Add(r.jitter(t)).After(now); t = r.s.Next(t) {
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
func (r *periodicRun[T]) settle(ctx context.Context, missed []time.Time, skipped uint64, current time.Time) time.Time {
	if skipped > 0 {
		r.p.mu.Lock()
		r.p.st.Missed += skipped
		r.p.mu.Unlock()
	}
	var last time.Time
	for _, t := range missed {
		r.tick(ctx, t)
		last = t
	}
	if !current.IsZero() {
		r.tick(ctx, current)
		last = current
	}
	return last
}

// tick enqueues the job of tick t, retrying an unavailable backend until
// the tick after t is due, and records the outcome.
func (r *periodicRun[T]) tick(ctx context.Context, t time.Time) {
	until := t.Add(r.q.horizon)
	if n := r.s.Next(t); !n.IsZero() && n.Add(r.jitter(n)).Before(until) {
		until = n.Add(r.jitter(n))
	}
	id := tickID(r.p.name, t)
	delays := periodicBackoff.Sequence()
	for {
		if !r.q.clk.Now().Before(t.Add(r.q.horizon)) {
			r.record(t, TickMissed, nil) // too late to tell it from a tick handled since
			return
		}
		err := r.enqueue(ctx, t, id)
		switch {
		case err == nil:
			r.record(t, TickEnqueued, nil)
			return
		case errors.Is(err, ErrDuplicate):
			r.record(t, TickDuplicate, nil)
			return
		case !errors.Is(err, ErrUnavailable):
			r.record(t, TickFailed, err)
			return
		}
		wait := delays.Next()
		if !r.q.clk.Now().Add(wait).Before(until) {
			r.record(t, TickFailed, err)
			return
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			r.record(t, TickFailed, err)
			return
		case <-timer.C:
		}
	}
}

// enqueue enqueues the job of tick t with id. A panic in the payload
// function fails the tick with a *PanicError.
func (r *periodicRun[T]) enqueue(ctx context.Context, t time.Time, id string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Where: "Periodic payload", Value: v, Stack: debug.Stack()}
		}
	}()
	// Not abandoned at Stop: a tick being enqueued is, or is not, and says
	// which in the stats. (The backend bounds its call.)
	_, err = r.q.Enqueue(context.WithoutCancel(ctx), r.payload(t), WithID(id))
	return err
}

// periodicBackoff spaces the retries of a tick's enqueue.
var periodicBackoff = backoff.Exponential(50*time.Millisecond, 2, 5*time.Second,
	backoff.WithJitter(backoff.EqualJitter))

// record records the outcome o of tick t (err if it failed).
func (r *periodicRun[T]) record(t time.Time, o PeriodicOutcome, err error) {
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.Last, p.st.LastID, p.st.LastOutcome = t, tickID(p.name, t), o
	switch o {
	case TickEnqueued:
		p.st.Enqueued++
	case TickDuplicate:
		p.st.Duplicates++
	case TickMissed:
		p.st.Missed++
	default:
		p.st.Failed++
		p.st.Err = err
	}
}

// jitter is the delay of tick t's enqueue (see WithJitter): a hash of the
// schedule's name and t, the same in every process.
func (r *periodicRun[T]) jitter(t time.Time) time.Duration {
	if r.o.jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(tickID(r.p.name, t)))
	return time.Duration(h.Sum64() % uint64(r.o.jitter))
}
