package queue

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/panics"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/stats"
	"github.com/corral-go/corral/retry"
)

// op is how a job is settled.
type op int

const (
	opAck op = iota
	opNack
	opRelease
	opBury
	opSnooze // a Nack that spends no attempt (see Snooze)
)

// outcome decides how to settle the job in w.d, whose handler returned herr
// (not nil: handle acks a nil return itself) or panicked (panicErr), and
// sets a.Error. It runs the user's code (the
// methods of herr, the backoff policy): if that panics, say on a typed nil
// error, the job is dead-lettered with that panic instead, as poison, so
// that it is settled all the same rather than left to its lease.
func (w *worker[T]) outcome(herr, panicErr error, leaseOver, shutdown bool, a *Attempt) (o op, delay time.Duration, ev Event) {
	var catch panics.Catcher
	defer func() {
		if p := catch.Panic; p != nil {
			err := &PanicError{Where: "Handler", Value: p.Value, Stack: p.Stack}
			a.Error = err.Error()
			o, delay, ev = opBury, 0, Event{Reason: ReasonPanic, Err: err}
		}
	}()
	defer catch.Recover()
	o, delay, ev = w.decide(herr, panicErr, leaseOver, shutdown, a)
	catch.Returned()
	return o, delay, ev
}

// decide is outcome, but for the recovery of a panic in the user's code.
func (w *worker[T]) decide(herr, panicErr error, leaseOver, shutdown bool, a *Attempt) (op, time.Duration, Event) {
	c := w.c
	switch {
	case panicErr != nil:
		a.Error = panicErr.Error()
		return opBury, 0, Event{Reason: ReasonPanic, Err: panicErr}
	case context.Cause(w.ls.Context()) == ErrCanceled: // see Consumer.renew
		a.Error = herr.Error()
		return opBury, 0, Event{Reason: ReasonCanceled, Err: herr}
	case shutdown:
		return opRelease, 0, Event{}
	}
	if leaseOver {
		herr = fmt.Errorf("%w: %w", ErrLeaseExpired, herr)
	} else if delay, ok := snoozed(herr); ok {
		return w.snooze(herr, delay, a)
	}
	a.Error = herr.Error()
	switch {
	case retry.IsPermanent(herr):
		return opBury, 0, Event{Reason: ReasonPermanent, Err: herr}
	case w.d.Attempt >= c.opts.maxAttempts:
		return opBury, 0, Event{Reason: ReasonAttempts, Err: herr}
	}
	delay := c.delays.After(w.d.Attempt, herr)
	return opNack, delay, Event{Err: herr, Delay: delay}
}

// settle applies op to the job w holds, counts the outcome and calls its
// hook with ctx. counted says whether the outcome is Drain's or Close's to
// report. a and ev are the caller's, which settle fills in (ev's ID, Key
// and Attempt); they are passed by pointer because this is the hot path of
// every job, and settle keeps neither. A failed backend call (a lost lease:
// the backend already moved the job on) counts as nothing, or as abandoned
// in the report.
//
// It is the one switch over the ops (opMeanings is the one table of them),
// and it makes the backend call itself: this is every job's path, and a
// call more on it shows in BenchmarkQueueInMemory.
func (w *worker[T]) settle(ctx context.Context, counted bool, o op, delay time.Duration, a *Attempt, ev *Event) {
	c := w.c
	b := c.q.backend
	d := &w.d
	hooks := &c.q.hooks
	ev.ID, ev.Key, ev.Attempt = d.ID, d.Key, runs(d, a)
	var (
		counter *atomic.Uint64               // the queue's counter of o, nil if none
		hook    func(context.Context, Event) // the hook that reports o, nil if none or unset
		dead    driver.BuryResult
		err     error
	)
	switch o {
	case opAck:
		w.in = callAck
		if acksNext(c.fast, hooks.OnSuccess, c.lane, c.recv) {
			w.at = now(c.keeper, &c.q.clk)
			w.hasNext, err = c.fast.AckNext(c.bg, d, w.at, c.backendLease())
		} else {
			err = b.Ack(c.bg, d)
		}
		counter, hook = &c.q.c.Acked, hooks.OnSuccess
	case opNack, opSnooze:
		w.in = callNack
		err = b.Nack(c.bg, d, delay, *a)
		counter, hook = opMeanings[o].counter(&c.q.c), hooks.OnRetry
	case opRelease:
		w.in = callRelease
		err = b.Release(c.bg, d, delay)
	default: // opBury
		w.in = callBury
		dead, err = b.Bury(c.bg, d, ev.Reason, *a)
		counter, hook = c.q.c.Dead(ev.Reason), hooks.OnDead
	}
	w.in = callNone
	if !w.hasNext {
		w.d = driver.Delivery{}
	}
	if err != nil || counted || c.fast == nil {
		if !w.account(counted, o, err) {
			return
		}
	}
	if counter != nil {
		counter.Add(1)
	}
	if hook != nil {
		callHook(ctx, c, opMeanings[o].hookName, hook, *ev)
	}
	if dead.DeadEvicted != nil {
		c.q.deadEvicted(c.bg, dead.DeadEvicted, c)
	}
}

// runs is the Attempt of the event of settling d with the attempt a: the
// handler runs the job had. A settle whose Attempt has Number 0 ran no
// handler on d (refuse, or a release), so its job had d.Attempt-1.
func runs(d *driver.Delivery, a *Attempt) int {
	if a.Number == 0 {
		return d.Attempt - 1
	}
	return d.Attempt
}

// acksNext reports whether a worker's ack takes the next ready job with it
// (driver.InProcess.AckNext), given the consumer's fast, OnSuccess hook,
// lane and recv. It needs an InProcess backend. Taking the next job with
// the ack holds it, its lease not yet renewed, while the OnSuccess hook
// runs: with a hook, a slow hook would keep the job from the other
// workers. A consumer of a Share receives its jobs, and waits for a slot
// with each in hand. And intake must not have stopped. (A function of the
// fields, not a method of the generic Consumer: so it is inlined in settle,
// which it keeps within gocyclo 15.)
func acksNext(fast driver.InProcess, onSuccess func(context.Context, Event), share *lane, recv context.Context) bool {
	return fast != nil && onSuccess == nil && share == nil && recv.Err() == nil
}

// account is settle's path for any outcome but an InProcess backend's
// success outside Drain and Close: it observes err, the outcome of the backend call
// settling the job with o, for Queue.Health, counts it in the report if
// counted, and reports whether the call succeeded; a failure counts in
// Stats.BackendErrors.
func (w *worker[T]) account(counted bool, o op, err error) bool {
	c := w.c
	if err != nil || c.fast == nil { // an InProcess backend answers: nothing to observe
		c.observe(c.bg, err)
	}
	if counted {
		c.mu.Lock()
		if err != nil {
			c.report.Abandoned++
		} else {
			*opMeanings[o].report(&c.report)++
		}
		c.mu.Unlock()
	}
	if err != nil {
		if c.bg.Err() == nil { // not Close giving up: see Stats.BackendErrors
			c.q.c.BackendErrors.Add(1)
		}
		return false
	}
	return true
}

// opMeaning is what settling a job with an op means for every queue alike:
// the Report field it counts in and the name of its hook.
type opMeaning struct {
	report   func(*Report) *int
	hookName string
	// counter is the queue's counter of the op, for the ops that share a
	// case of settle (nil for the others).
	counter func(*stats.Counters) *atomic.Uint64
}

var opMeanings = [...]opMeaning{
	opAck:     {reportAcked, "OnSuccess", nil},
	opNack:    {reportReturned, "OnRetry", countRetried},
	opRelease: {reportReturned, "", nil},
	opBury:    {reportDeadLettered, "OnDead", nil},
	opSnooze:  {reportReturned, "OnRetry", countSnoozed},
}

func countRetried(c *stats.Counters) *atomic.Uint64 { return &c.Retried }
func countSnoozed(c *stats.Counters) *atomic.Uint64 { return &c.Snoozed }

func reportAcked(r *Report) *int        { return &r.Acked }
func reportReturned(r *Report) *int     { return &r.Returned }
func reportDeadLettered(r *Report) *int { return &r.DeadLettered }
