package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/internal/panics"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/lease"
	"github.com/corral-go/corral/queue/internal/ratelimit"
	"github.com/corral-go/corral/queue/internal/redelivery"
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

// Report is what [Consumer.Drain] or [Consumer.Close] did with the jobs in
// the consumer's hands once it was called. Each job whose handler returned
// after the call, or that the consumer settled after the call without
// running a handler (a job received as Close began is returned unhandled),
// is counted in exactly one field. A job whose handler returned before the
// call is not counted, even if the consumer was still settling it.
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
	// expired in the backend and the job moved on). The backend redelivers
	// such a job once its lease ends (or already has, if the lease was
	// lost); a call cut short by Close's ctx may still have reached the
	// backend, which then holds the job as that call left it (ready again,
	// say). Handlers are never abandoned: Close waits for every one to
	// return.
	Abandoned int
}

// Consumer handles the jobs of a queue on a bounded number of workers. It is
// started by [Queue.Consume] and stopped by [Consumer.Drain] (which first
// works off the backlog) or [Consumer.Close]. A Consumer is safe for
// concurrent use. The methods of a zero Consumer panic: use Queue.Consume.
type Consumer[T any] struct {
	q      *Queue[T]
	h      Handler[T]
	opts   consumerOptions
	delays *redelivery.Delays // of redeliveries (WithBackoff)
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
	lane    *lane            // the consumer's place in its Share (WithShare), nil if none
	loops   sync.WaitGroup   // the worker goroutines (see worker.run)
	fast    driver.InProcess // the queue's (see Queue.fast), nil if none
	rate    *ratelimit.Limit // WithRateLimit's, kept by the backend; nil if none
	// startRecv is the backend's, if it has one and nothing waits between
	// taking a job and its handler (no rate limit, no Share, not InProcess):
	// its workers receive with ReceiveStart, and call no Start.
	startRecv driver.ReceiveStarter

	keepers sync.WaitGroup // the keeper and renewLoop

	// keeper times the handlers (see package lease); its clock dates the
	// job a worker takes with the ack of the last one
	// (driver.InProcess.AckNext), and the backend leases that job from it:
	// a lease shortened by the reading's age, never lengthened.
	keeper *lease.Keeper

	// counting is set once by Drain or Close, never reset: the jobs settled
	// from then on are theirs to report.
	counting atomic.Bool
	// draining is set by Drain while it works off the backlog: a worker
	// about to wait for a job then wakes Drain through idle (capacity 1).
	draining atomic.Bool
	idle     chan struct{}

	// closing serialises Drain and Close, and guards closed: a call holds
	// it by sending into it (capacity 1). A channel, not a mutex, so that a
	// Close waiting for a Drain is durably blocked in a testing/synctest
	// bubble.
	closing chan struct{}
	closed  bool // set once by Drain or Close, never reset

	timed bool // q.timed: handler runs are timed (see Queue.timed)

	hookPanic atomic.Pointer[PanicError] // the first hook panic, set once
	loopPanic atomic.Pointer[PanicError] // the first other panic on a worker (see run)

	mu      sync.Mutex    // guards the fields below
	running int           // worker loops that have not returned
	drained chan struct{} // closed when running reaches 0
	report  Report
}

// Consume starts a consumer running h on the queue's jobs. ctx supplies the
// values of handler contexts; its cancellation cancels running handlers and
// stops intake (Drain or Close is still needed to wait for the workers).
//
// Each worker receives a job from the backend, runs h and settles the job,
// on a goroutine owned by the consumer. Any number of consumers may consume
// one queue at once. Consume returns ErrClosed once the queue is closed,
// and the backend's error if it refuses the consumer's lease (see
// [driver.SharedLease]). A nil ctx, handler or option panics.
func (q *Queue[T]) Consume(ctx context.Context, h Handler[T], opts ...ConsumerOption) (*Consumer[T], error) {
	switch {
	case q.backend == nil:
		panic(zeroQueue)
	case ctx == nil:
		panic("queue: Consume with a nil context")
	case h == nil:
		panic("queue: nil handler")
	}
	o := newConsumerOptions(opts)
	if q.closed.Load() {
		return nil, ErrClosed
	}
	rate, err := q.checkConsumer(ctx, &o)
	if err != nil {
		return nil, err
	}
	c := &Consumer[T]{
		q: q, h: h, opts: o, delays: redelivery.New(o.backoff),
		idle:    make(chan struct{}, 1),
		closing: make(chan struct{}, 1),
		drained: make(chan struct{}),
		running: o.loops(),
		timed:   q.timed,
	}
	c.fast, c.rate = q.fast, rate
	c.startRecv = q.receiveStarter(rate, &o)
	c.bg, c.bgCancel = context.WithCancelCause(context.WithoutCancel(ctx))
	c.base, c.baseCancel = context.WithCancelCause(ctx)
	c.recv, c.recvCancel = context.WithCancelCause(c.base)
	// A Receive in flight when Close cancels c.recv finishes its call and
	// gives back what it took, until Close's ctx ends (c.bg with it).
	c.recv = driver.WithAbandon(c.recv, c.bg)
	c.workers = make([]*worker[T], o.loops())
	slots := make([]*lease.Slot, len(c.workers))
	for i := range c.workers {
		w := &worker[T]{c: c, index: i}
		if o.share != nil {
			w.grant, w.renew = make(chan struct{}, 1), w.Renew
		}
		c.workers[i], slots[i] = w, &w.ls
	}
	c.keeper = lease.New(c.base, o.lease, slots, c.drained)
	// Registered and started under q.mu, so that Queue.Close either closes
	// this consumer or has closed the queue before it started.
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed.Load() {
		c.bgCancel(ErrClosed)
		c.baseCancel(ErrClosed)
		return nil, ErrClosed
	}
	q.consumers[c] = struct{}{}
	if o.share != nil {
		c.lane = o.share.join(o.shareName, o.shareWeight, o.workers, q.Stats)
	}
	for _, w := range c.workers {
		c.loops.Go(w.run)
	}
	c.keepers.Go(c.keeper.Run)
	c.keepers.Go(c.renewLoop)
	return c, nil
}

// checkConsumer checks what the backend must do for a consumer with options
// o: keep its lease, if the lease is shared, and its rate limit, whose
// limiter it returns (nil without one).
func (q *Queue[T]) checkConsumer(ctx context.Context, o *consumerOptions) (*ratelimit.Limit, error) {
	rate, err := q.rateLimit(o)
	if err != nil {
		return nil, err
	}
	if sl, ok := q.backend.(driver.SharedLease); ok {
		bl := o.lease + o.lease/2 // see backendLease
		err := sl.CheckLease(ctx, bl)
		q.observe(ctx, err)
		if err != nil {
			return nil, fmt.Errorf("queue: consumer lease %v (a backend lease of %v): %w", o.lease, bl, err)
		}
	}
	return rate, nil
}

// receiveStarter returns the backend's ReceiveStarter for a consumer with
// options o and rate limiter rate, if the backend has one and nothing waits
// between the consumer's jobs and their handlers (no rate limit, no Share;
// an InProcess backend answers Start at once): nil otherwise.
func (q *Queue[T]) receiveStarter(rate *ratelimit.Limit, o *consumerOptions) driver.ReceiveStarter {
	if q.fast != nil || rate != nil || o.share != nil {
		return nil
	}
	rs, _ := q.backend.(driver.ReceiveStarter)
	return rs
}

// newConsumerOptions returns the defaults with opts applied; a nil option
// panics.
func newConsumerOptions(opts []ConsumerOption) consumerOptions {
	o := consumerOptions{
		workers:     runtime.GOMAXPROCS(0),
		lease:       30 * time.Second,
		maxAttempts: 10,
		maxSnoozes:  defaultMaxSnoozes,
		backoff:     backoff.Exponential(time.Second, 2, 10*time.Minute, backoff.WithJitter(backoff.EqualJitter)),
	}
	for _, opt := range opts {
		if opt == nil {
			panic("queue: nil option")
		}
		opt.applyConsumer(&o)
	}
	switch {
	case o.share != nil && o.share.size == 0:
		panic("queue: zero Share: use queue.NewShare")
	case o.share != nil && !o.workersSet:
		o.workers = o.share.size
	}
	return o
}

// loops returns the number of worker loops o asks for: the workers, and
// with a Share as many more, which wait for a slot with a job in hand, so
// that a consumer with a backlog always has a job waiting when a slot frees
// (else a consumer whose every worker runs would miss the turn its next job
// was due, to one that happened to have a job waiting).
func (o *consumerOptions) loops() int {
	if o.share != nil {
		return 2 * o.workers
	}
	return o.workers
}

// observe records the outcome of a backend call a goroutine of c made (see
// Queue.observe): an OnHealth hook it calls is c's (see callHook).
func (c *Consumer[T]) observe(ctx context.Context, err error) {
	if quiet(&c.q.hl, err) {
		return
	}
	if h, changed := c.q.hl.Observe(ctx, err); changed && c.q.hooks.OnHealth != nil {
		callHook(ctx, c, "OnHealth", c.q.onHealth, healthOf(h))
	}
}

// noteLosses calls the OnHealth hook, as the consumer's hooks are called (see callHook), if the
// backend's Losses grew: after a Receive or a Drain's Stats, once its outcome was observed.
func (c *Consumer[T]) noteLosses(ctx context.Context) {
	if c.q.losses != nil && c.q.lossesGrew() && c.q.onLoss != nil {
		callHook(ctx, c, "OnHealth", c.q.lossFound, healthOf(c.q.hl.State()))
	}
}

// backendLease is the lease asked of the backend: half again the handler's,
// so that a handler winding down just after its deadline, or a renewal a
// little late on a busy machine, never lets the job go to someone else.
func (c *Consumer[T]) backendLease() time.Duration {
	return c.opts.lease + c.opts.lease/2
}

// zeroConsumer is the panic of a method of a zero Consumer.
const zeroConsumer = "queue: zero Consumer: use Queue.Consume"

// Close stops intake, waits for every running handler to return, settles
// their jobs, and returns what happened to the jobs in the consumer's hands
// (see [Report]). Jobs not yet received stay in the backend, for the next
// consumer: with the in-memory backend they are lost when the process exits, so call
// [Consumer.Drain] instead to work them off first.
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
// backend never blocks in these calls and still settles them.) A worker
// whose Receive is in flight when intake stops waits for it: a broker
// backend lets a call it already sent answer (within its call timeout) and
// gives back a job that call took before it returns, so that no job is left
// leased for nobody (see driver.Backend's Receive). The end of ctx ends
// that wait too, with the backends of this module's repository (and any
// that waits with driver.Call.UntilDeadline and GiveBack): the call is
// abandoned, and a job it took comes back when its lease ends.
//
// A handler must return soon once its ctx is done: Close waits for it, as
// pool.Pool.Close and scope.Run wait for their tasks. Until it returns, its
// job stays leased to this consumer, the lease renewed, so no one else
// handles it. When Close returns, every goroutine of the consumer has
// returned.
//
// A panic in a hook on one of the consumer's goroutines (see [Hooks]) does
// not stop the job or the worker: it is recovered, the job is handled and
// settled as if the hook had returned, and Close, once it has drained
// everything, panics with the first such panic, a *[PanicError] whose Where
// names the hook. A hook bug thus surfaces in the goroutine that owns the
// consumer instead of vanishing.
//
// A panic anywhere else on the consumer's goroutines, in a method of the
// Backend (Receive, Start, Ack, Nack, Release, Bury, Extend) say, stops the
// consumer's intake: the other workers settle their jobs and return, the
// job the panicking worker held is left to the backend (redelivered when
// its lease ends), and Close, once it has drained everything, panics with
// it, a *[PanicError] whose Where names the method ("Backend.Receive"),
// before any hook panic. No other package's panic type crosses the queue's
// API.
//
// Close is idempotent: later calls return ErrClosed, as do calls after
// Drain. Close must not be called from a handler of the same consumer (it
// would wait for itself).
func (c *Consumer[T]) Close(ctx context.Context) (Report, error) {
	if !c.beginClose() {
		return Report{}, ErrClosed
	}
	defer func() { <-c.closing }()
	return c.closeLocked(ctx)
}

// beginClose begins a Drain or a Close: it takes c.closing and starts
// counting the report, or reports false, c.closing not held, if c was
// drained or closed already. It panics on a zero Consumer.
func (c *Consumer[T]) beginClose() bool {
	if c.q == nil {
		panic(zeroConsumer)
	}
	c.closing <- struct{}{}
	if c.closed {
		<-c.closing
		return false
	}
	c.counting.Store(true)
	return true
}

// closeLocked is Close, from its stop of intake on. c.closing held.
func (c *Consumer[T]) closeLocked(ctx context.Context) (Report, error) {
	c.closed = true
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
	// Every worker loop has counted itself out (drained): wait for their
	// goroutines to return.
	c.loops.Wait()
	if c.lane != nil {
		c.opts.share.leave(c.lane)
	}
	c.q.forget(c)
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

// ErrGoexit is the error of a handler that called runtime.Goexit (as
// t.FailNow does) instead of returning. Such a run fails its job as a panic
// does: the job is dead-lettered with [ReasonPanic] at once, the OnDead
// event's Err matches ErrGoexit (a handler's panic is a [*PanicError]
// instead), and the last entry of the job's history has its text. It is the
// same value as scope.ErrGoexit and pool.ErrGoexit.
var ErrGoexit = panics.ErrGoexit

// errLoopPanic ends intake after a panic on a worker (see run).
var errLoopPanic = errors.New("queue: a worker panicked")
