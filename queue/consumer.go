package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/internal/panics"
	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/retry"
)

// Handler handles one job. Returning nil acks the job; an error redelivers
// it after the consumer's backoff delay, unless the error is permanent
// (retry.Permanent), the attempt was the last allowed one, or the handler
// panicked, in which case the job is dead-lettered.
//
// ctx is cancelled with cause [ErrLeaseExpired] when the handler runs past
// its lease, with cause [ErrLeaseLost] when the backend refuses to renew the
// job's lease (it expired there, and the job may be delivered again), and
// with a cause matching [ErrClosed] when the consumer's Close gives up
// waiting. It must not be used after the handler returns. A handler
// must return soon once ctx is done: [Consumer.Close] waits for it.
type Handler[T any] func(ctx context.Context, job Job[T]) error

// ConsumerOption configures a Consumer in Consume.
type ConsumerOption interface{ applyConsumer(*consumerOptions) }

type consumerOptions struct {
	workers     int
	lease       time.Duration
	maxAttempts int
	backoff     backoff.Policy
}

type consumerOptionFunc func(*consumerOptions)

func (f consumerOptionFunc) applyConsumer(o *consumerOptions) { f(o) }

// Workers sets how many jobs are handled at once. The default is
// runtime.GOMAXPROCS(0).
func Workers(n int) ConsumerOption {
	return consumerOptionFunc(func(o *consumerOptions) { o.workers = n })
}

// Lease sets how long a handler may run before its ctx is cancelled (with
// cause [ErrLeaseExpired]) and the job redelivered, the attempt spent. A
// handler that still returns nil acks its job: its work is done. The
// consumer looks at its running handlers every d/16 (but every 100µs at
// most often and every 10ms at least often), instead of arming a timer per
// job: a handler is cancelled once it has run for d, never sooner, and up
// to that interval later (later still when every core of the machine is
// busy and the consumer's goroutine that looks waits for one). While the
// handler runs, the consumer keeps renewing the job's lease in the backend
// (which it takes at 1.5 times d, renewing it every d/2), so the job is not
// delivered to anyone else; if the consumer goes away, the backend
// redelivers the job when that lease ends. (The in-memory backend lives in
// the consumer's process: a job a worker takes from it as it acks the last
// one is held with no end until the first renewal, and the consumer
// settles it.) If the backend refuses a renewal
// ([ErrLeaseLost]: the renewals came too late, as they may with a lease of
// a few milliseconds on a busy machine), the handler's ctx is cancelled
// with that cause. The default is 30s.
func Lease(d time.Duration) ConsumerOption {
	return consumerOptionFunc(func(o *consumerOptions) { o.lease = d })
}

// MaxAttempts sets how many attempts a job gets, the first included, before
// a failure dead-letters it with [ReasonAttempts]. The default is 10.
func MaxAttempts(n int) ConsumerOption {
	return consumerOptionFunc(func(o *consumerOptions) { o.maxAttempts = n })
}

// Backoff sets the redelivery delay after a failed attempt: failed attempt
// n (from 1) waits the delay of retry n-1 of p, as a retry loop would.
//
// A backend does not keep a job's previous delay, which decorrelated jitter
// draws from: the consumer replays p's [backoff.Sequence] up to retry n-1
// instead, so each delay follows the same distribution as in an in-process
// loop (with backoff.WithSeed, the delays are exactly p.Delays), though it is
// not drawn from the job's actual previous delay.
//
// A server's hint attached to the handler's error with retry.After replaces
// the delay, clamped to p.Cap() or one minute (retry's default MaxHint),
// whichever is longer, and jittered only upward (p.Spread), as in
// retry.Policy.Next.
//
// The default is backoff.Exponential(time.Second, 2, 10*time.Minute) with
// equal jitter.
func Backoff(p backoff.Policy) ConsumerOption {
	return consumerOptionFunc(func(o *consumerOptions) { o.backoff = p })
}

// Report is what Close did with the jobs in the consumer's hands once it was
// called. Each job whose handler returned after the call, or that the
// consumer settled after the call without running a handler (a job received
// as Close began is returned unhandled), is counted in exactly one field. A
// job whose handler returned before the call is not counted, even if the
// consumer was still settling it.
type Report struct {
	// Acked counts jobs acked.
	Acked int
	// Returned counts jobs given back to the backend unacked: released
	// unattempted (their handler cancelled by Close), or scheduled for a
	// retry.
	Returned int
	// DeadLettered counts jobs dead-lettered.
	DeadLettered int
	// Abandoned counts jobs the consumer could not settle: the backend call
	// that acks, returns or dead-letters the job failed (a broker
	// unreachable, or Close's ctx ended, which ends the consumer's backend
	// calls, before the call completed), or the job's lease was lost (it
	// expired in the backend and the job moved on). The backend redelivers such a job once its
	// lease ends (or already has, if the lease was lost). Handlers are
	// never abandoned: Close waits for every one to return.
	Abandoned int
}

// Consumer handles the jobs of a queue on a bounded number of workers. It is
// started by [Queue.Consume] and stopped by Close. A Consumer is safe for
// concurrent use.
type Consumer[T any] struct {
	q     *Queue[T]
	h     Handler[T]
	opts  consumerOptions
	retry *retry.Policy // the backoff and hint rules of redeliveries
	// bg is the context of backend calls (settling, renewing): not
	// cancelled with the consumer's ctx, but ended by Close when its ctx
	// ends, so that a hung backend call cannot hold Close forever.
	bg       context.Context
	bgCancel context.CancelCauseFunc

	base       context.Context // parent of handler contexts
	baseCancel context.CancelCauseFunc
	recv       context.Context // Receive calls; cancelled when Close starts
	recvCancel context.CancelCauseFunc

	workers []*worker[T]
	pool    *pool.Pool
	mem     *Memory        // the backend, if it is a Memory: see Memory.ackNext
	keepers sync.WaitGroup // keep and renewLoop

	// The keeper's clock (see keep): its last reading while it samples the
	// running handlers, nil while it is parked. A worker settling a job
	// starts the next one at this time, without reading the clock itself.
	clock atomic.Pointer[time.Time]
	// parked is set while the keeper waits for a handler to start; the
	// worker that clears it wakes the keeper through wake (capacity 1).
	parked atomic.Bool
	wake   chan struct{}

	closing atomic.Bool // set once by Close (before intake stops), never reset
	closeMu sync.Mutex  // serialises Close

	hookPanic atomic.Pointer[HookPanic]       // the first hook panic, set once
	loopPanic atomic.Pointer[pool.PanicError] // the first other panic on a worker (see run)

	mu      sync.Mutex    // guards the fields below
	running int           // worker loops that have not returned
	drained chan struct{} // closed when running reaches 0
	report  Report
}

// worker is the state of one worker loop, reused for every job so that
// handling a job allocates nothing of its own.
type worker[T any] struct {
	c    *Consumer[T]
	d    Delivery
	loop func(context.Context) error // w.run, bound once

	// With a Memory backend, acking a job also takes the next ready one
	// into d, under one lock (Memory.ackNext): hasNext says d holds it, as
	// if Receive had returned it.
	hasNext bool

	// st is the lease state of the job in d: the count of deliveries
	// handled (its generation, shifted by stShift) and the st* bits. The
	// worker starts and ends a lease without mu (see endLease). The
	// keeper and renew, which act on a running handler from their own
	// goroutines, hold mu and claim the generation first.
	st atomic.Uint64

	// The keeper's own record of the handler it saw running: its
	// generation, and when the keeper first saw it (a time at or after
	// its start, as time since the keeper began).
	seenGen uint64
	seenAt  time.Duration

	mu     sync.Mutex // serialises the claims on st, and guards the fields below
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// The bits of worker.st.
const (
	// stRunning: a handler runs on d. renew renews its lease, and the
	// keeper cancels it once it has run for the consumer's lease.
	stRunning = 1 << iota
	// stClaimed: the keeper or renew, holding mu, acts on this
	// generation (reads d, cancels ctx). The worker cannot end the lease
	// under it: it waits for mu instead.
	stClaimed
	// stExpired: the keeper cancelled this generation's handler at the
	// end of its lease.
	stExpired

	stShift = iota
)

// Consume starts a consumer running h on the queue's jobs. ctx supplies the
// values of handler contexts; its cancellation cancels running handlers and
// stops intake (Close is still needed to wait for the workers).
//
// Each worker receives a job from the backend, runs h and settles the job,
// on a goroutine of a pool.Pool owned by the consumer. Any number of
// consumers may consume one queue at once.
func (q *Queue[T]) Consume(ctx context.Context, h Handler[T], opts ...ConsumerOption) (*Consumer[T], error) {
	if h == nil {
		panic("queue: nil handler")
	}
	o := consumerOptions{
		workers:     runtime.GOMAXPROCS(0),
		lease:       30 * time.Second,
		maxAttempts: 10,
		backoff:     backoff.Exponential(time.Second, 2, 10*time.Minute, backoff.WithJitter(backoff.EqualJitter)),
	}
	for _, opt := range opts {
		opt.applyConsumer(&o)
	}
	if o.workers < 1 || o.lease <= 0 || o.maxAttempts < 1 {
		return nil, fmt.Errorf("queue: invalid consumer options (workers %d, lease %v, max attempts %d)",
			o.workers, o.lease, o.maxAttempts)
	}
	// The consumer counts attempts itself: retry's limit is out of reach.
	ro := []retry.Option{retry.Backoff(o.backoff), retry.MaxAttempts(math.MaxInt)}
	if o.backoff.Cap() > time.Minute { // else retry's default MaxHint, one minute
		ro = append(ro, retry.MaxHint(o.backoff.Cap()))
	}
	c := &Consumer[T]{
		q: q, h: h, opts: o, retry: retry.New(ro...),
		wake:    make(chan struct{}, 1),
		drained: make(chan struct{}),
		// Queue room for a worker loop resubmitted by itself (see run).
		pool:    pool.New(o.workers, o.workers),
		running: o.workers,
	}
	c.mem, _ = q.backend.(*Memory)
	c.bg, c.bgCancel = context.WithCancelCause(context.WithoutCancel(ctx))
	c.base, c.baseCancel = context.WithCancelCause(ctx)
	c.recv, c.recvCancel = context.WithCancelCause(c.base)
	c.workers = make([]*worker[T], o.workers)
	for i := range c.workers {
		w := &worker[T]{c: c}
		w.loop = w.run
		w.ctx, w.cancel = context.WithCancelCause(c.base)
		c.workers[i] = w
	}
	for _, w := range c.workers {
		if err := c.pool.Submit(context.Background(), w.loop); err != nil {
			panic("queue: fresh pool refused a worker: " + err.Error()) // cannot happen
		}
	}
	c.keepers.Add(2)
	go c.keep()
	go c.renewLoop()
	return c, nil
}

// run is a worker loop (serve), and what follows its end.
func (w *worker[T]) run(context.Context) error {
	var catch panics.Catcher
	defer w.exit(&catch)
	defer catch.Recover()
	w.serve()
	catch.Returned()
	return nil
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
		c.loopPanic.CompareAndSwap(nil, &pool.PanicError{Value: catch.Panic.Value, Stack: catch.Panic.Stack})
		c.recvCancel(errLoopPanic)
	case catch.Goexit && c.recv.Err() == nil:
		// The handler called runtime.Goexit: its job is settled and this
		// goroutine is ending; carry on in a fresh one.
		if c.pool.Submit(context.Background(), w.loop) == nil {
			return
		}
	}
	if w.hasNext {
		// Taken by the last ack, and the loop ended before handling it:
		// give it back. (No user code runs between the ack and the top of
		// the loop today, so this guards a later change.)
		w.hasNext = false
		w.settle(c.closing.Load(), opRelease, 0, Attempt{}, Event{})
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
		if w.hasNext {
			w.hasNext = false
		} else {
			err = c.q.backend.Receive(c.recv, c.backendLease(), &w.d)
		}
		if err != nil {
			if c.recv.Err() != nil {
				return
			}
			c.q.c.backendErrors.Add(1)
			t := time.NewTimer(errDelays.Next())
			select {
			case <-t.C:
			case <-c.recv.Done():
			}
			t.Stop()
			continue
		}
		errDelays.Reset()
		if c.recv.Err() != nil {
			// Close started while the job was being received.
			w.settle(c.closing.Load(), opRelease, 0, Attempt{}, Event{})
			return
		}
		w.handle()
	}
}

// backendLease is the lease asked of the backend: half again the handler's,
// so that a handler winding down just after its deadline, or a renewal a
// little late on a busy machine, never lets the job go to someone else.
func (c *Consumer[T]) backendLease() time.Duration {
	return c.opts.lease + c.opts.lease/2
}

// renewEvery is how often renewLoop renews the backend leases of the
// running handlers' jobs: a third of the backend lease, so that two
// renewals can be late before a lease ends. There is no floor: a floor
// could exceed a short lease.
func (c *Consumer[T]) renewEvery() time.Duration {
	return max(c.backendLease()/3, 1)
}

// sampleEvery is how often keep looks at the running handlers, and so how
// late past its lease a handler may be cancelled: a sixteenth of the lease,
// but no less than 100µs (a timer storm) and no more than 10ms (the
// keeper's clock should stay close to the time: see Consumer.clock).
func (c *Consumer[T]) sampleEvery() time.Duration {
	return min(max(c.opts.lease/16, 100*time.Microsecond), 10*time.Millisecond)
}

// keep is the consumer's keeper. While handlers run, it wakes every
// [Consumer.sampleEvery] and:
//   - reads the clock for the workers (see Consumer.clock), so that a job
//     taken with the ack of the last one costs them no clock read;
//   - cancels, with cause [ErrLeaseExpired], a handler that has run for the
//     lease. A handler is timed from the first reading of the clock the
//     keeper took after it saw the handler running, which is after its
//     start: so it is never cancelled early, and it is cancelled at most
//     sampleEvery late (when the keeper is on time: a machine whose every
//     core is busy can make it late). A job costs no timer of its own.
//
// When no handler runs and none started since its last look, it parks
// until one starts (see startLease). It returns once every worker loop has
// returned.
func (c *Consumer[T]) keep() {
	defer c.keepers.Done()
	origin := time.Now() // keep's times are durations since origin
	states := make([]uint64, len(c.workers))
	prev := make([]uint64, len(c.workers)) // states at the last look
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		// The states first, then the clock: a handler seen running
		// started before the reading.
		busy := false
		for i, w := range c.workers {
			states[i] = w.st.Load()
			// Running, or started since the last look: with short
			// handlers, a look often falls between two jobs, and parking
			// then would send the workers back to the clock.
			busy = busy || states[i]&stRunning != 0 || states[i]>>stShift != prev[i]>>stShift
		}
		copy(prev, states)
		if !busy {
			if !c.park() {
				return
			}
			continue
		}
		now := time.Now()
		c.clock.Store(&now)
		d := c.sample(states, now.Sub(origin))
		if t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
		case <-c.drained:
			return
		}
	}
}

// sample acts on the states of the workers' handlers at since (see keep):
// it cancels those past their lease, and returns how long to wait until the
// next look.
func (c *Consumer[T]) sample(states []uint64, since time.Duration) time.Duration {
	lease := c.opts.lease
	wakeAt := since + c.sampleEvery()
	for i, w := range c.workers {
		s := states[i]
		if s&(stRunning|stExpired) != stRunning {
			continue
		}
		if g := s >> stShift; g != w.seenGen {
			w.seenGen, w.seenAt = g, since
		} else if since-w.seenAt >= lease {
			w.expire(s)
			continue
		}
		wakeAt = min(wakeAt, w.seenAt+lease)
	}
	return wakeAt - since
}

// park waits until a handler starts, and reports false if every worker loop
// returned instead. It clears the clock first: the workers read it
// themselves while the keeper is away.
func (c *Consumer[T]) park() bool {
	c.clock.Store(nil)
	c.parked.Store(true)
	// A worker sets stRunning, then looks at parked; this sets parked,
	// then looks at stRunning: one of the two sees the other.
	for _, w := range c.workers {
		if w.st.Load()&stRunning != 0 {
			c.parked.Store(false)
			return true
		}
	}
	select {
	case <-c.wake:
		return true
	case <-c.drained:
		return false
	}
}

// renewLoop extends the backend leases of the running handlers' jobs every
// [Consumer.renewEvery], until every worker loop has returned: a handler
// still running after its ctx was cancelled keeps its job, so that no one
// else handles it meanwhile. It runs apart from keep, so that a slow
// backend delays renewals, never the handlers' deadlines.
func (c *Consumer[T]) renewLoop() {
	defer c.keepers.Done()
	t := time.NewTicker(c.renewEvery())
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-c.drained:
			return
		}
		c.renew()
	}
}

// renew extends the backend leases of the running handlers' jobs. Extend
// runs outside w.mu, on a copy of the delivery. If the backend says the
// lease was lost (the job may already be with someone else), the handler's
// ctx is cancelled with cause [ErrLeaseLost], provided the worker still
// holds that same delivery.
func (c *Consumer[T]) renew() {
	for _, w := range c.workers {
		w.mu.Lock()
		s, ok := w.claim()
		if !ok {
			w.mu.Unlock()
			continue
		}
		d := w.d
		w.st.Store(s) // release the claim
		w.mu.Unlock()
		err := c.q.backend.Extend(c.bg, &d, c.backendLease())
		if err != nil && c.bg.Err() == nil {
			c.q.c.backendErrors.Add(1)
		}
		if errors.Is(err, ErrLeaseLost) {
			w.mu.Lock()
			// Only if the same handler still runs.
			if w.st.CompareAndSwap(s, s|stClaimed) {
				w.cancel(ErrLeaseLost)
				w.st.Store(s)
			}
			w.mu.Unlock()
		}
	}
}

// now returns the time to start a job at: the keeper's last reading while
// it runs, which is at most [Consumer.sampleEvery] old when the keeper is
// on time; else the queue's clock's.
func (c *Consumer[T]) now() time.Time {
	if t := c.clock.Load(); t != nil {
		return *t
	}
	return c.q.clk.now()
}

// receiveBackoff spaces a worker's retries of a failing Receive.
var receiveBackoff = backoff.Exponential(10*time.Millisecond, 2, 5*time.Second,
	backoff.WithJitter(backoff.EqualJitter))

// op is how a job is settled.
type op int

const (
	opAck op = iota
	opNack
	opRelease
	opBury
)

// startLease starts the lease of a new job and returns its context. It
// takes w.mu only to replace a ctx cancelled by the previous job. It wakes
// the keeper if it is parked.
//
// From here until endLease, renewLoop renews the job's backend lease and
// the keeper times the handler. The checks before (decoding, attempts,
// start-by) settle the job at once, without a renewal.
func (w *worker[T]) startLease() context.Context {
	if w.ctx.Err() != nil { // cancelled by the previous job
		w.mu.Lock()
		w.ctx, w.cancel = context.WithCancelCause(w.c.base)
		w.mu.Unlock()
	}
	w.st.Store((w.st.Load()>>stShift+1)<<stShift | stRunning)
	if c := w.c; c.parked.Load() && c.parked.CompareAndSwap(true, false) {
		select {
		case c.wake <- struct{}{}:
		default: // a wake-up is pending
		}
	}
	return w.ctx
}

// claim claims the generation of a running handler, for renew to read w.d;
// it then stores the state claim returns to release it. w.mu held.
func (w *worker[T]) claim() (uint64, bool) {
	for {
		s := w.st.Load()
		if s&stRunning == 0 {
			return s, false
		}
		if w.st.CompareAndSwap(s, s|stClaimed) {
			return s, true
		}
	}
}

// expire cancels the handler of generation state s, which has run for its
// lease, unless the worker has moved on. Called by the keeper.
func (w *worker[T]) expire(s uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.st.CompareAndSwap(s, s|stClaimed) {
		w.cancel(ErrLeaseExpired)
		w.st.Store(s | stExpired)
	}
}

// endLease ends the lease of the current job and reports whether it expired.
// Unless the keeper (expire) or renew holds the job (stClaimed), it takes
// no lock.
//
// The renewals of the job's lease stop here: the settle that follows takes
// far less than the time left on it (at least the handler's lease, or no
// end at all for a job held by ackNext).
func (w *worker[T]) endLease() bool {
	s := w.st.Load()
	if s&stClaimed == 0 && w.st.CompareAndSwap(s, s&^stRunning) {
		return s&stExpired != 0
	}
	// A claim is released under mu: once it is ours, nobody holds one.
	w.mu.Lock()
	defer w.mu.Unlock()
	s = w.st.Load()
	w.st.Store(s &^ stRunning)
	return s&stExpired != 0
}

// handle runs the handler for the job in w.d and settles it.
func (w *worker[T]) handle() {
	c := w.c
	q := c.q
	d := &w.d
	// The start-by deadline is for the first start only: a job released
	// at shutdown comes back with Attempt 1 but Redelivered.
	startBy := d.Attempt == 1 && !d.Redelivered && !d.StartBy.IsZero()
	// When the in-memory backend handed the job over (see Delivery.at):
	// the start, or a little before it if the time was the keeper's. The
	// start-by deadline is checked against the clock itself.
	now := d.at
	if now.IsZero() || startBy {
		now = q.clk.now()
	}
	job, err := q.job(&d.Message)
	if err != nil {
		w.settle(c.closing.Load(), opBury, 0, Attempt{Number: d.Attempt, Start: now, End: now, Error: err.Error()},
			Event{Reason: ReasonPermanent, Err: err})
		return
	}
	if d.Attempt > c.opts.maxAttempts {
		// The last attempt's lease expired in the backend (its consumer
		// was gone): no attempt left.
		err := fmt.Errorf("queue: delivered %d times, max attempts %d", d.Attempt, c.opts.maxAttempts)
		w.settle(c.closing.Load(), opBury, 0, Attempt{Number: d.Attempt, Start: now, End: now, Error: err.Error()},
			Event{Reason: ReasonAttempts, Err: err})
		return
	}
	if startBy && now.After(d.StartBy) {
		err := errors.New("queue: not started by " + d.StartBy.Format(time.RFC3339Nano))
		w.settle(c.closing.Load(), opBury, 0, Attempt{Number: 1, Start: now, End: now, Error: err.Error()},
			Event{Reason: ReasonExpired, Err: err})
		return
	}
	hctx := w.startLease()
	var (
		catch panics.Catcher
		herr  error
	)
	defer func() {
		// Runs on return, panic and runtime.Goexit alike, after
		// catch.Recover. Whether the job is Close's to report is decided
		// as the handler returns, before it is settled: a caller who saw
		// it settled called Close later.
		drain := c.closing.Load()
		var panicErr error
		switch {
		case catch.Panic != nil:
			panicErr = &panicError{*catch.Panic}
		case catch.Goexit:
			panicErr = errGoexit
		}
		leaseOver := w.endLease()
		shutdown := !leaseOver && c.base.Err() != nil
		a := Attempt{Number: d.Attempt, Start: now}
		if herr != nil || panicErr != nil {
			a.End = time.Now()
		}
		if herr == nil && panicErr == nil {
			w.settle(drain, opAck, 0, a, Event{})
			return
		}
		o, delay, ev := w.outcome(herr, panicErr, leaseOver, shutdown, &a)
		w.settle(drain, o, delay, a, ev)
	}()
	defer catch.Recover()
	// OnStart runs under the settle defer: whatever it does, the job is
	// settled. A panic in it is recovered (see callHook).
	if h := q.hooks.OnStart; h != nil {
		c.callHook("OnStart", h, Event{ID: d.ID, Key: d.Key, Attempt: d.Attempt})
	}
	herr = c.h(hctx, job)
	catch.Returned()
}

// outcome decides how to settle the job in w.d, whose handler returned herr
// (not nil: handle acks a nil return itself) or panicked (panicErr), and
// sets a.Error. It runs the user's code (the
// methods of herr, the backoff policy): if that panics, say on a typed nil
// error, the job is dead-lettered with that panic instead, as poison, so
// that it is settled all the same. (A job taken with the last ack has no
// lease end until renewed: left unsettled, it would stay in flight for
// good.)
func (w *worker[T]) outcome(herr, panicErr error, leaseOver, shutdown bool, a *Attempt) (o op, delay time.Duration, ev Event) {
	defer func() {
		if r := recover(); r != nil {
			err := &panicError{panics.Recovered{Value: r, Stack: debug.Stack()}}
			a.Error = err.Error()
			o, delay, ev = opBury, 0, Event{Reason: ReasonPanic, Err: err}
		}
	}()
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
	delay = c.retryDelay(w.d.Attempt, herr)
	return opNack, delay, Event{Err: herr, Delay: delay}
}

// callHook calls the hook h with ev. A panic in h is recovered, so that the
// job goes on (a hook observes jobs, it does not decide their fate); the
// first one is kept and re-raised by Close.
func (c *Consumer[T]) callHook(name string, h func(Event), ev Event) {
	defer func() {
		if r := recover(); r != nil {
			c.hookPanic.CompareAndSwap(nil, &HookPanic{Hook: name, Value: r, Stack: debug.Stack()})
		}
	}()
	h(ev)
}

// HookPanic is the value [Consumer.Close] panics with when a hook of
// [Hooks] panicked on one of the consumer's workers: the first such panic,
// with its hook's name and the stack where it happened.
type HookPanic struct {
	Hook  string // "OnStart", "OnSuccess", "OnRetry" or "OnDead"
	Value any    // the value passed to panic
	Stack []byte // the stack of the panicking goroutine
}

// Error returns the panic value and stack.
func (p *HookPanic) Error() string {
	return fmt.Sprintf("queue: %s hook panicked: %v\n%s", p.Hook, p.Value, p.Stack)
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
// hook. drain says whether the outcome is Close's to report. A failed
// backend call (a lost lease: the backend already moved the job on) counts
// as nothing, or as abandoned in Close's report.
func (w *worker[T]) settle(drain bool, o op, delay time.Duration, a Attempt, ev Event) {
	c := w.c
	b := c.q.backend
	d := &w.d
	ev.ID, ev.Key, ev.Attempt = d.ID, d.Key, d.Attempt
	var err error
	switch o {
	case opAck:
		// Taking the next job with the ack holds it while the OnSuccess
		// hook runs: with a hook, a slow hook would keep the job from the
		// other workers.
		if c.mem != nil && c.q.hooks.OnSuccess == nil && c.recv.Err() == nil {
			w.hasNext, err = c.mem.ackNext(d, c.now())
		} else {
			err = b.Ack(c.bg, d)
		}
	case opNack:
		err = b.Nack(c.bg, d, delay, a)
	case opRelease:
		err = b.Release(c.bg, d)
	case opBury:
		err = b.Bury(c.bg, d, ev.Reason, a)
	}
	if !w.hasNext {
		w.d = Delivery{}
	}
	if drain {
		c.mu.Lock()
		switch {
		case err != nil:
			c.report.Abandoned++
		case o == opAck:
			c.report.Acked++
		case o == opNack || o == opRelease:
			c.report.Returned++
		case o == opBury:
			c.report.DeadLettered++
		}
		c.mu.Unlock()
	}
	if err != nil {
		if c.bg.Err() == nil { // not Close giving up: see Stats.BackendErrors
			c.q.c.backendErrors.Add(1)
		}
		return
	}
	hooks := &c.q.hooks
	switch o {
	case opAck:
		c.q.c.acked.Add(1)
		if h := hooks.OnSuccess; h != nil {
			c.callHook("OnSuccess", h, ev)
		}
	case opNack:
		c.q.c.retried.Add(1)
		if h := hooks.OnRetry; h != nil {
			c.callHook("OnRetry", h, ev)
		}
	case opBury:
		c.q.c.dead[reasonIndex(ev.Reason)].Add(1)
		if h := hooks.OnDead; h != nil {
			c.callHook("OnDead", h, ev)
		}
	}
}

// Close stops intake, waits for every running handler to return, settles
// their jobs, and returns what happened to the jobs in the consumer's hands
// (see [Report]). Jobs not yet received stay in the backend, for the next
// consumer.
//
// If ctx ends first, Close cancels the running handlers, with a cause that
// matches [ErrClosed] and wraps context.Cause(ctx), and still waits for them
// to return: the job of a handler that then fails is returned to the backend
// unattempted, that of one returning nil is acked. Close then returns the
// report and context.Cause(ctx). The end of ctx also ends the context of the
// consumer's backend calls (settling jobs, renewing leases), so that a hung
// backend cannot hold Close: a backend that honours its ctx then fails the
// calls still to come or in progress, and their jobs are counted in
// [Report.Abandoned] and redelivered when their leases end. (The in-memory
// backend never blocks in these calls and still settles them.)
//
// A handler must return soon once its ctx is done: Close waits for it, as
// pool.Pool.Close and scope.Run wait for their tasks. Until it returns, its
// job stays leased to this consumer, the lease renewed, so no one else
// handles it. When Close returns, every goroutine of the consumer has
// returned.
//
// A panic in a hook (OnStart, OnSuccess, OnRetry, OnDead) on a worker of
// the consumer does not stop the job or the worker: it is recovered, the
// job is handled and settled as if the hook had returned, and Close, once
// it has drained everything, panics with the first such panic, a
// *[HookPanic]. A hook bug thus surfaces in the goroutine that owns the
// consumer instead of vanishing.
//
// A panic anywhere else on a worker, in a method of the Backend (Receive,
// Ack, Nack, Release, Bury) say, stops the consumer's intake: the other
// workers settle their jobs and return, the job the panicking worker held
// is left to the backend (redelivered when its lease ends), and Close, once
// it has drained everything, panics with it, a *[pool.PanicError] (before
// any hook panic).
//
// Close is idempotent: later calls return ErrClosed. Close must not be
// called from a handler of the same consumer (it would wait for itself).
func (c *Consumer[T]) Close(ctx context.Context) (Report, error) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closing.Load() { // set only here, under closeMu
		return Report{}, ErrClosed
	}
	c.closing.Store(true)
	c.recvCancel(ErrClosed)
	var err error
	select {
	case <-c.drained:
	case <-ctx.Done():
		err = context.Cause(ctx)
		cause := &closeCause{cause: err}
		c.baseCancel(cause)
		c.bgCancel(cause) // ends the backend calls too: see Report.Abandoned
		<-c.drained
	}
	c.baseCancel(ErrClosed)
	c.bgCancel(ErrClosed)
	c.keepers.Wait()
	// Every worker loop has returned: the pool has nothing left to run.
	_ = c.pool.Close(context.Background())
	if p := c.loopPanic.Load(); p != nil {
		panic(p)
	}
	if p := c.hookPanic.Load(); p != nil {
		panic(p)
	}
	c.mu.Lock()
	r := c.report
	c.mu.Unlock()
	return r, err
}

// closeCause is the cancellation cause of handler contexts when Close's ctx
// ends before they return.
type closeCause struct{ cause error }

func (e *closeCause) Error() string {
	return "queue: consumer closed before the handler returned: " + e.cause.Error()
}
func (e *closeCause) Is(target error) bool { return target == ErrClosed }
func (e *closeCause) Unwrap() error        { return e.cause }

// panicError is the failure of a handler that panicked.
type panicError struct{ panics.Recovered }

func (e *panicError) Error() string {
	return fmt.Sprintf("queue: handler panicked: %v\n%s", e.Value, e.Stack)
}

var errGoexit = errors.New("queue: handler called runtime.Goexit")

// errLoopPanic ends intake after a panic on a worker (see run).
var errLoopPanic = errors.New("queue: a worker panicked")
