package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/internal/panics"
	"github.com/corral-go/corral/internal/sample"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/lease"
	"github.com/corral-go/corral/queue/internal/ratelimit"
	"github.com/corral-go/corral/queue/internal/stats"
)

// worker is the state of one worker loop, reused for every job so that
// handling a job allocates nothing of its own.
type worker[T any] struct {
	c *Consumer[T]
	d driver.Delivery

	// With an InProcess backend, acking a job also takes the next ready
	// one into d, in one step (AckNext): hasNext says d holds it, as if
	// Receive had returned it.
	hasNext bool
	// chained says that the job in d was taken by the AckNext that settled
	// the one before, and ended is when that one's run ended (since the
	// queue's epoch), if it was timed, else -1: the run of a chained job is
	// timed from there, a clock reading less per job (see handle).
	chained bool
	ended   time.Duration
	// sampler picks the runs this worker times when the queue is not
	// timed as a whole (see Stats.Wait); lat is the shard of the queue's
	// distributions it records them into (see stats.Shards), taken on its
	// first.
	sampler sample.Sampler
	lat     *stats.Latencies
	// index is the worker's index in its consumer.
	index int
	// at is when an InProcess backend leased the job in d (ReceiveAt), or
	// the keeper's reading of the clock when the worker took it with
	// AckNext, from which the backend leased it; zero with any other
	// backend.
	at time.Time
	// in is the Backend method the worker is calling, if any: the Where of
	// a panic in it.
	in backendCall

	// ls is the lease of the job in d (see package lease), which the
	// consumer's keeper times and renew reads under a claim.
	ls lease.Slot

	// grant hands the worker a slot of the consumer's Share (capacity 1),
	// and renew is w.Renew, bound once; both nil without a Share.
	grant chan struct{}
	renew func() bool
}

// backendCall names a Backend method a worker calls (see worker.in).
type backendCall uint8

const (
	callNone backendCall = iota
	callReceive
	callStart
	callAck
	callNack
	callRelease
	callBury
	callExtend
)

// where is the PanicError.Where of a panic on a worker calling b.
func (b backendCall) where() string {
	return [...]string{"Consumer", "Backend.Receive", "Backend.Start", "Backend.Ack", "Backend.Nack",
		"Backend.Release", "Backend.Bury", "Backend.Extend"}[b]
}

// run is a worker loop (serve), and what follows its end, on a goroutine
// of c.loops.
func (w *worker[T]) run() {
	w.c.q.labelled()
	var catch panics.Catcher
	defer w.exit(&catch)
	defer catch.Recover()
	w.serve()
	catch.Returned()
}

// exit ends the worker loop, which ended as catch says.
func (w *worker[T]) exit(catch *panics.Catcher) {
	c := w.c
	switch {
	case catch.Panic != nil:
		// A panic outside the handler, the hooks and the codec, which
		// handle contains: in a Backend method, or a bug of corral's.
		// Another loop would likely panic the same way: stop intake
		// instead, and keep the panic for Close.
		c.loopPanic.CompareAndSwap(nil, &PanicError{Where: w.in.where(), Value: catch.Panic.Value, Stack: catch.Panic.Stack})
		c.recvCancel(errLoopPanic)
	case catch.Goexit && c.recv.Err() == nil:
		// The handler called runtime.Goexit: its job is settled and this
		// goroutine is ending; carry on in a fresh one.
		c.loops.Go(w.run)
		return
	}
	if w.hasNext {
		// Taken by the last ack, and the loop ended before handling it:
		// give it back. (No user code runs between the ack and the top of
		// the loop today, so this guards a later change.)
		w.hasNext = false
		w.settle(c.base, c.counting.Load(), opRelease, 0, &Attempt{}, &Event{})
	}
	c.mu.Lock()
	c.running--
	if c.running == 0 {
		close(c.drained)
	}
	c.mu.Unlock()
}

// serve receives, handles and settles jobs until intake stops.
func (w *worker[T]) serve() {
	c := w.c
	// Backend failures (a broker unreachable) are retried after a capped,
	// jittered backoff, so that the workers do not retry in step.
	errDelays := receiveBackoff.Sequence()
	for {
		var err error
		w.chained = w.hasNext
		if w.hasNext {
			w.hasNext = false
		} else {
			if c.draining.Load() {
				// Nothing in hand: Drain may find the backlog empty.
				select {
				case c.idle <- struct{}{}:
				default: // a wake-up is pending
				}
			}
			w.in = callReceive
			w.at, err = c.receive(&w.d)
			w.in = callNone
			if !quiet(&c.q.hl, err) { // asked here: a call to observe costs every job
				c.observe(c.recv, err)
			}
			c.noteLosses(c.recv)
		}
		if err != nil {
			if c.recv.Err() != nil {
				return
			}
			c.q.c.BackendErrors.Add(1)
			t := time.NewTimer(errDelays.Next())
			select {
			case <-t.C:
			case <-c.recv.Done():
			}
			t.Stop()
			continue
		}
		errDelays.Reset()
		if !w.admit() {
			if c.recv.Err() != nil {
				return
			}
			continue
		}
		if c.lane != nil {
			if !w.handleShared() {
				return
			}
			continue
		}
		w.handle()
	}
}

// admit reports whether the job just received in w.d may go on to its
// handler: not if Close started while it was being received (it is given
// back), nor if the consumer's rate limit (WithRateLimit) gave it no start
// before intake stopped or its lease was lost (see takeStart).
func (w *worker[T]) admit() bool {
	c := w.c
	if c.recv.Err() != nil {
		w.settle(c.base, c.counting.Load(), opRelease, 0, &Attempt{}, &Event{})
		return false
	}
	// With a Share, the start is taken with a slot in hand (handleShared).
	return c.rate == nil || c.lane != nil || w.takeStart()
}

// handleShared waits for a slot of the consumer's Share for the job in
// w.d, then handles it (see handle) and gives the slot back. While it
// waits, it renews the job's lease. It reports false if intake stopped
// meanwhile: the job was given back.
func (w *worker[T]) handleShared() bool {
	c := w.c
	if ok, lost := w.acquireShared(); !ok {
		return lost
	}
	start := time.Now()
	defer func() { c.opts.share.release(c.lane, time.Since(start)) }()
	w.handle()
	return true
}

// acquireShared waits for a slot of the consumer's Share for the job in
// w.d and, with a rate limit, a start: a start is taken with the slot in
// hand, and if none is free the slot is given back while the job waits for
// one, so that a consumer held back by its rate holds back no other. It
// reports ok with the slot taken; else whether the worker goes on (the
// job's lease was lost: dropped) or stops (intake stopped: the job was
// given back).
func (w *worker[T]) acquireShared() (ok, goOn bool) {
	c := w.c
	errDelays := receiveBackoff.Sequence()
	for {
		if !c.opts.share.acquire(c.recv, c.lane, w.grant, c.renewEvery(), w.renew) {
			if c.recv.Err() != nil {
				w.settle(c.base, c.counting.Load(), opRelease, 0, &Attempt{}, &Event{})
				return false, false
			}
			w.dropLost() // the lease was lost while the job waited
			return false, true
		}
		if c.rate == nil {
			return true, false
		}
		got, wait := c.rate.Try(c.bg, &errDelays, w)
		if got {
			return true, false
		}
		c.opts.share.release(c.lane, 0)
		if !w.started(ratelimit.Wait(wait, c.renewEvery(), c.recv.Done(), w)) {
			return false, c.recv.Err() == nil
		}
	}
}

// Renew renews the lease of the job in w.d while it waits for a slot of the
// Share or a start (see ratelimit.Holder), and reports false if the lease
// was lost. Consume binds it once per worker (w.renew): a closure made per
// job would cost an allocation per job.
func (w *worker[T]) Renew() bool {
	c := w.c
	w.in = callExtend
	err := c.q.backend.Extend(c.bg, &w.d, c.backendLease())
	w.in = callNone
	if errors.Is(err, ErrCanceled) {
		return true // Start refuses it, and the job is dead-lettered as cancelled
	}
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		w.Failed(err)
		return true // the broker may answer the next renewal
	}
	return err == nil
}

// Failed records err, the failure of a backend call a worker made with the
// consumer's bg: for Health, and in Stats.BackendErrors unless it was
// Close giving up. It is also the worker's ratelimit.Holder method.
func (w *worker[T]) Failed(err error) {
	c := w.c
	c.observe(c.bg, err)
	if c.bg.Err() == nil {
		c.q.c.BackendErrors.Add(1)
	}
}

// receive receives a job into d, and returns when the backend leased it if
// the backend is InProcess (zero otherwise); with the backend's ReceiveStart
// if the consumer has it (startRecv).
func (c *Consumer[T]) receive(d *driver.Delivery) (time.Time, error) {
	if c.fast != nil {
		return c.fast.ReceiveAt(c.recv, c.backendLease(), d)
	}
	if c.startRecv != nil {
		return time.Time{}, c.startRecv.ReceiveStart(c.recv, c.backendLease(), d)
	}
	return time.Time{}, c.q.backend.Receive(c.recv, c.backendLease(), d)
}

// receiveBackoff spaces a worker's retries of a failing Receive.
var receiveBackoff = backoff.Exponential(10*time.Millisecond, 2, 5*time.Second,
	backoff.WithJitter(backoff.EqualJitter))

// handle runs the handler for the job in w.d and settles it.
func (w *worker[T]) handle() {
	c := w.c
	q := c.q
	d := &w.d
	// The start-by deadline is for the first start only: a job released
	// at shutdown comes back with Attempt 1 but Redelivered.
	startBy := d.Attempt == 1 && !d.Redelivered && !d.StartBy.IsZero()
	// When an InProcess backend handed the job over (see worker.at): the
	// start, or a little before it if the time was the keeper's. The
	// start-by deadline is checked against the clock itself.
	now := w.at
	if now.IsZero() || startBy {
		now = q.clk.Now()
	}
	var job Job[T]
	err := q.job(&d.Message, &job)
	if err != nil || d.Attempt > c.opts.maxAttempts || startBy && now.After(d.StartBy) {
		w.refuse(err, now, startBy)
		return
	}
	if !w.start() {
		return
	}
	hctx := c.keeper.Start(&w.ls)
	var (
		catch    panics.Catcher
		herr     error
		runStart = time.Duration(-1) // when the handler started (since q.epoch), if timed
	)
	// Runs on return, panic and runtime.Goexit alike, after catch.Recover. (A
	// deferred call, not a closure: a frame less on every job's path.)
	defer w.finish(hctx, &catch, &herr, now, &runStart)
	defer catch.Recover()
	// OnStart runs under the settle defer: whatever it does, the job is
	// settled. A panic in it is recovered (see callHook).
	if h := q.hooks.OnStart; h != nil {
		callHook(hctx, c, "OnStart", h, Event{ID: d.ID, Key: d.Key, Attempt: d.Attempt})
	}
	if c.timed || w.sampler.Take() {
		runStart = w.runStart(now)
	}
	herr = c.h(hctx, job)
	catch.Returned()
}

// runStart returns when the handler of the job in w.d starts, since the
// queue's epoch, for a timed queue; now is handle's reading of the clock.
// With an InProcess backend, no Share and no OnStart hook, the worker goes
// from taking the job to its handler through corral's own steps only (the
// decode, the backend's Start, which answers at once, the lease), and the
// run is timed from a reading it already has: for a job taken by the
// AckNext of the job before, that one's end; for any other, now, the
// backend's reading as it handed the job over (ReceiveAt). Those steps
// count in the run, and the handler's start costs no clock reading of its
// own. Otherwise something that must not count may come between (OnStart,
// the wait for a slot of the Share, a backend's Start over the network),
// and the start is read from the clock.
func (w *worker[T]) runStart(now time.Time) time.Duration {
	c := w.c
	switch {
	case c.fast == nil || c.lane != nil || c.q.hooks.OnStart != nil:
		return c.q.epoch.Since()
	case w.chained && w.ended >= 0:
		return w.ended
	}
	return c.q.epoch.At(now)
}

// refuse settles the job in w.d, which handle will not run: its payload
// failed to decode with err, it has no attempt left, or it missed its
// start-by deadline (checked if startBy). It dead-letters the job with the
// reason, but hands back one of a payload version the queue does not
// understand (see handBack). now is the time it was to start. (The checks
// are handle's, where the common case costs no call; refuse only tells
// them apart.)
//
// Nothing runs on this delivery: the Attempt given to Bury has Number 0.
// A job with no attempt left is buried with a zero Attempt, which adds no
// entry to its history (the backend recorded its last run, whose lease
// expired); the other reasons add one entry that says why.
func (w *worker[T]) refuse(err error, now time.Time, startBy bool) {
	c := w.c
	d := &w.d
	var reason Reason
	switch {
	case d.Attempt > c.opts.maxAttempts:
		// The last attempt's lease expired in the backend (its consumer
		// was gone), which recorded it: no attempt left.
		err = fmt.Errorf("queue: %d attempts used, max attempts %d", d.Attempt-1, c.opts.maxAttempts)
		w.settle(c.base, c.counting.Load(), opBury, 0, &Attempt{}, &Event{Reason: ReasonAttempts, Err: err})
		return
	case startBy && now.After(d.StartBy):
		err = errors.New("queue: not started by " + d.StartBy.Format(time.RFC3339Nano))
		reason = ReasonExpired
	case !c.q.vers.Understands(d.Version):
		if w.handBack(now) {
			return
		}
		err = fmt.Errorf("%w: no consumer that does took the job within %v", err, c.q.vers.Waits.Wait())
		reason = ReasonVersion
	default:
		reason = ReasonDecode
	}
	w.settle(c.base, c.counting.Load(), opBury, 0, &Attempt{Start: now, End: now, Error: err.Error()},
		&Event{Reason: reason, Err: err})
}

// handBack gives the job in w.d, of a payload version the queue does not
// understand, back to the backend at now, without spending an attempt, for
// a consumer that understands it, and reports true; or reports false, the
// job still in hand, once it has waited for one for the version wait (see
// WithVersionWait): refuse then dead-letters it with ReasonVersion.
func (w *worker[T]) handBack(now time.Time) bool {
	c := w.c
	delay, over := c.q.vers.Waits.HandBack(w.d.ID, now)
	if over {
		return false
	}
	w.settle(c.base, c.counting.Load(), opRelease, delay, &Attempt{}, &Event{})
	return true
}

// start records in the backend that the handler starts on the job in w.d
// (Backend.Start), and reports whether it may run. If the backend fails,
// the job goes back unattempted, or to its lease if the backend cannot
// take it back either. A job received with ReceiveStart was started as it
// was received.
func (w *worker[T]) start() bool {
	c := w.c
	if c.startRecv != nil {
		return true
	}
	w.in = callStart
	err := c.q.backend.Start(c.bg, &w.d)
	w.in = callNone
	if err == nil {
		return true
	}
	if errors.Is(err, ErrCanceled) { // an operator cancelled the job before it started
		w.settle(c.base, c.counting.Load(), opBury, 0, &Attempt{Error: err.Error()}, &Event{Reason: ReasonCanceled, Err: err})
		return false
	}
	w.Failed(err)
	if errors.Is(err, ErrLeaseLost) {
		w.dropLost()
		return false
	}
	w.settle(c.base, c.counting.Load(), opRelease, 0, &Attempt{}, &Event{})
	return false
}

// dropLost forgets the job in w.d, whose lease was lost: the backend has
// it back. It counts in the report as abandoned.
func (w *worker[T]) dropLost() {
	c := w.c
	w.d = driver.Delivery{}
	if c.counting.Load() {
		c.mu.Lock()
		c.report.Abandoned++
		c.mu.Unlock()
	}
}

// finish settles the job in w.d once its handler, started at now, ended as
// catch says, returning *herrp; *runStartp is when its run started, since
// the queue's epoch, if it is timed (else, or if OnStart ended the
// goroutine before the handler ran, -1). (Pointers, read as finish runs: handle defers it
// before they are set.) Whether the job is Drain's or Close's to report is
// decided as the handler returns, before it is settled: a caller who saw it
// settled called them later.
func (w *worker[T]) finish(hctx context.Context, catch *panics.Catcher, herrp *error, now time.Time, runStartp *time.Duration) {
	c := w.c
	herr, runStart := *herrp, *runStartp
	counted := c.counting.Load()
	var panicErr error
	switch {
	case catch.Panic != nil:
		panicErr = &PanicError{Where: "Handler", Value: catch.Panic.Value, Stack: catch.Panic.Stack}
	case catch.Goexit:
		panicErr = ErrGoexit
	}
	failed := herr != nil || panicErr != nil
	var run time.Duration
	w.ended = -1
	if runStart >= 0 {
		w.ended = c.q.epoch.Since()
		if w.lat == nil {
			w.lat = c.q.lat.Shard(w.index)
		}
		run = w.lat.Record(&w.d.Message, c.q.epoch, runStart, w.ended)
		if !c.timed {
			run = 0 // a sampled run: events carry durations in a timed queue only
		}
	}
	leaseOver := w.ls.End()
	shutdown := !leaseOver && c.base.Err() != nil
	a := Attempt{Number: w.d.Attempt, Start: now}
	if failed {
		a.End = c.q.clk.Now()
	}
	var ev Event
	o, delay := opAck, time.Duration(0)
	if failed {
		o, delay, ev = w.outcome(herr, panicErr, leaseOver, shutdown, &a)
	}
	ev.Duration = run
	w.settle(hctx, counted, o, delay, &a, &ev)
}
