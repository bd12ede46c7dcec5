package queue

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/panics"
	"github.com/corral-go/corral/retry"
)

// op is how a job is settled.
type op int

const (
	opAck op = iota
	opNack
	opRelease
	opBury
)

// outcome decides how to settle the job in w.d, whose handler returned herr
// (not nil: handle acks a nil return itself) or panicked (panicErr), and
// sets a.Error. It runs the user's code (the
// methods of herr, the backoff policy): if that panics, say on a typed nil
// error, the job is dead-lettered with that panic instead, as poison, so
// that it is settled all the same. (A job taken with the last ack has no
// lease end until renewed: left unsettled, it would stay in flight for
// good.)
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
	case shutdown:
		return opRelease, 0, Event{}
	}
	if leaseOver {
		herr = fmt.Errorf("%w: %w", ErrLeaseExpired, herr)
	}
	a.Error = herr.Error()
	switch {
	case retry.IsPermanent(herr):
		return opBury, 0, Event{Reason: ReasonPermanent, Err: herr}
	case w.d.Attempt >= c.opts.maxAttempts:
		return opBury, 0, Event{Reason: ReasonAttempts, Err: herr}
	}
	delay := c.retryDelay(w.d.Attempt, herr)
	return opNack, delay, Event{Err: herr, Delay: delay}
}

// errRetry stands for a handler's error in retry.Policy.Next, so that only
// Next's hint and backoff rules apply: the consumer has classified the
// handler's error itself (permanent, last attempt) before asking.
var errRetry = errors.New("queue: retry")

// retryDelay is the redelivery delay after failed attempt n (from 1), whose
// error was err.
func (c *Consumer[T]) retryDelay(n int, err error) time.Duration {
	// The backend does not keep the previous delay: replay the sequence to
	// it (n is at most MaxAttempts; a policy other than decorrelated
	// jitter ignores prev).
	var prev time.Duration
	seq := c.opts.backoff.Sequence()
	for range n - 1 {
		prev = seq.Next()
	}
	e := errRetry
	if h, ok := retry.Hint(err); ok {
		e = retry.After(errRetry, h)
	}
	d, _ := c.retry.Next(n, prev, e) // never gives up: see Consume
	return d
}

// settle applies op to the job w holds, counts the outcome and calls its
// hook with ctx. counted says whether the outcome is Drain's or Close's to
// report. a and ev are the caller's, which settle fills in (ev's ID, Key
// and Attempt); they are passed by pointer because this is the hot path of
// every job, and settle keeps neither. A failed backend call (a lost lease: the backend already moved
// the job on) counts as nothing, or as abandoned in the report.
func (w *worker[T]) settle(ctx context.Context, counted bool, o op, delay time.Duration, a *Attempt, ev *Event) {
	c := w.c
	d := &w.d
	ev.ID, ev.Key, ev.Attempt = d.ID, d.Key, d.Attempt
	s, dead, err := w.settleCall(o, delay, a, ev.Reason)
	if err != nil || c.quick == nil { // a quickConsumer answers: nothing to observe
		c.observe(c.bg, err)
	}
	if !w.hasNext {
		w.d = Delivery{}
	}
	if counted {
		c.mu.Lock()
		if err != nil {
			c.report.Abandoned++
		} else {
			*s.report(&c.report)++
		}
		c.mu.Unlock()
	}
	if err != nil {
		if c.bg.Err() == nil { // not Close giving up: see Stats.BackendErrors
			c.q.c.backendErrors.Add(1)
		}
		return
	}
	if s.counter != nil {
		s.counter.Add(1)
	}
	if s.hook != nil {
		callHook(ctx, c, s.hookName, s.hook, *ev)
	}
	if dead.DeadEvicted != nil {
		c.q.deadEvicted(c.bg, dead.DeadEvicted, c)
	}
}

// settlement is what settling a job with one op means besides the backend
// call: the Report field it counts in, the queue's counter (nil if none)
// and the hook that reports it (nil if none, or unset).
type settlement struct {
	report   func(*Report) *int
	counter  *atomic.Uint64
	hook     func(context.Context, Event)
	hookName string
}

func reportAcked(r *Report) *int        { return &r.Acked }
func reportReturned(r *Report) *int     { return &r.Returned }
func reportDeadLettered(r *Report) *int { return &r.DeadLettered }

// settleCall makes the backend call that settles the job in w.d with o
// (reason: the dead-letter reason of opBury), and returns what o means for
// the report, the counters and the hooks (see settlement). It is the one
// switch over the ops.
func (w *worker[T]) settleCall(o op, delay time.Duration, a *Attempt, reason Reason) (s settlement, dead BuryResult, err error) {
	c := w.c
	b := c.q.backend
	d := &w.d
	hooks := &c.q.hooks
	switch o {
	case opAck:
		w.in = callAck
		// Taking the next job with the ack holds it while the OnSuccess
		// hook runs: with a hook, a slow hook would keep the job from the
		// other workers.
		// A consumer of a Share waits for a slot with the job in hand,
		// which needs a lease end: it receives.
		if c.quick != nil && hooks.OnSuccess == nil && c.lane == nil && c.recv.Err() == nil {
			w.at = c.now()
			w.hasNext, err = c.quick.ackNext(d, w.at)
		} else {
			err = b.Ack(c.bg, d)
		}
		s = settlement{reportAcked, &c.q.c.acked, hooks.OnSuccess, "OnSuccess"}
	case opNack:
		w.in = callNack
		err = b.Nack(c.bg, d, delay, *a)
		s = settlement{reportReturned, &c.q.c.retried, hooks.OnRetry, "OnRetry"}
	case opRelease:
		w.in = callRelease
		err = b.Release(c.bg, d, delay)
		s = settlement{report: reportReturned}
	case opBury:
		w.in = callBury
		dead, err = b.Bury(c.bg, d, reason, *a)
		s = settlement{reportDeadLettered, &c.q.c.dead[reasonIndex(reason)], hooks.OnDead, "OnDead"}
	}
	w.in = callNone
	return s, dead, err
}
