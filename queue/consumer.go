package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/retry"
)

// Handler handles one job. Returning nil acks the job; an error redelivers
// it after the consumer's backoff delay, unless the error is permanent
// (retry.Permanent), the attempt was the last allowed one, or the handler
// panicked, in which case the job is dead-lettered.
//
// ctx is cancelled with cause [ErrLeaseExpired] when the handler runs past
// its lease, and with a cause matching [ErrClosed] when the consumer is
// closed before the handler returns. It must not be used after the handler
// returns.
type Handler[T any] func(ctx context.Context, job Job[T]) error

// ConsumerOption configures a Consumer in Consume.
type ConsumerOption interface{ applyConsumer(*consumerOptions) }

type consumerOptions struct {
	workers     int
	lease       time.Duration
	maxAttempts int
	backoff     backoff.Policy
	grace       time.Duration
}

type consumerOptionFunc func(*consumerOptions)

func (f consumerOptionFunc) applyConsumer(o *consumerOptions) { f(o) }

// Workers sets how many jobs are handled at once. The default is
// runtime.GOMAXPROCS(0).
func Workers(n int) ConsumerOption {
	return consumerOptionFunc(func(o *consumerOptions) { o.workers = n })
}

// Lease sets how long a handler may run before its ctx is cancelled and the
// job redelivered. The default is 30s (JetStream's default AckWait).
func Lease(d time.Duration) ConsumerOption {
	return consumerOptionFunc(func(o *consumerOptions) { o.lease = d })
}

// MaxAttempts sets how many attempts a job gets, the first included, before
// a failure dead-letters it with [ReasonAttempts]. The default is 10.
func MaxAttempts(n int) ConsumerOption {
	return consumerOptionFunc(func(o *consumerOptions) { o.maxAttempts = n })
}

// Backoff sets the redelivery delay after a failed attempt: retry n (0
// after the first failure) waits p.Delay(n, 0). The default is
// backoff.Exponential(time.Second, 2, 10*time.Minute) with equal jitter.
func Backoff(p backoff.Policy) ConsumerOption {
	return consumerOptionFunc(func(o *consumerOptions) { o.backoff = p })
}

// ShutdownGrace sets how long Close waits for cancelled handlers to return
// once its ctx ended. Handlers still running after that are abandoned. The
// default is 1s.
func ShutdownGrace(d time.Duration) ConsumerOption {
	return consumerOptionFunc(func(o *consumerOptions) { o.grace = d })
}

// Report is what Close did with the jobs in the consumer's hands.
type Report struct {
	// Acked counts jobs acked after Close was called (the drain).
	Acked int
	// Returned counts jobs given back to the backend unacked after Close
	// was called: released unattempted, or scheduled for a retry.
	Returned int
	// DeadLettered counts jobs dead-lettered after Close was called.
	DeadLettered int
	// Abandoned counts handlers still running when Close returned. Their
	// jobs stay leased in the backend until the lease expires, then are
	// redelivered (so an abandoned handler that keeps running may overlap
	// with the redelivery).
	Abandoned int
}

// Consumer handles the jobs of a queue on a bounded number of workers. It is
// started by [Queue.Consume] and stopped by Close. A Consumer is safe for
// concurrent use.
type Consumer[T any] struct {
	q    *Queue[T]
	h    Handler[T]
	opts consumerOptions

	base       context.Context // parent of handler contexts
	baseCancel context.CancelCauseFunc
	recv       context.Context // Receive calls; cancelled when Close starts
	recvCancel context.CancelCauseFunc

	slots    []*slot[T]
	free     chan *slot[T] // idle slots; capacity = workers
	workers  *pool.Pool
	loopDone chan struct{}
	keepDone chan struct{}

	closing atomic.Bool // set once by Close, never reset
	closeMu sync.Mutex  // serialises Close
	closed  bool        // guarded by closeMu

	mu      sync.Mutex    // guards the fields below
	held    int           // slots holding a job
	drained chan struct{} // closed when held reaches 0 while closing
	report  Report
}

// slot is one worker's state: the job it holds, reused for every job so
// that handling allocates nothing of its own.
type slot[T any] struct {
	c   *Consumer[T]
	d   Delivery
	run func(context.Context) error // s.handle, bound once

	mu      sync.Mutex // guards holding and the read of d by the lease keeper
	holding bool
}

// Consume starts a consumer running h on the queue's jobs. ctx supplies the
// values of handler contexts; its cancellation cancels running handlers and
// stops intake (Close is still needed to wait for the workers).
func (q *Queue[T]) Consume(ctx context.Context, h Handler[T], opts ...ConsumerOption) (*Consumer[T], error) {
	if h == nil {
		panic("queue: nil handler")
	}
	o := consumerOptions{
		workers:     runtime.GOMAXPROCS(0),
		lease:       30 * time.Second,
		maxAttempts: 10,
		backoff:     backoff.Exponential(time.Second, 2, 10*time.Minute, backoff.WithJitter(backoff.EqualJitter)),
		grace:       time.Second,
	}
	for _, opt := range opts {
		opt.applyConsumer(&o)
	}
	if o.workers < 1 || o.lease <= 0 || o.maxAttempts < 1 || o.grace < 0 {
		return nil, fmt.Errorf("queue: invalid consumer options (workers %d, lease %v, max attempts %d, grace %v)",
			o.workers, o.lease, o.maxAttempts, o.grace)
	}
	c := &Consumer[T]{
		q: q, h: h, opts: o,
		free:     make(chan *slot[T], o.workers),
		loopDone: make(chan struct{}),
		keepDone: make(chan struct{}),
		drained:  make(chan struct{}),
	}
	c.base, c.baseCancel = context.WithCancelCause(ctx)
	c.recv, c.recvCancel = context.WithCancelCause(c.base)
	// The pool's queue absorbs the instant between a slot being freed by a
	// finishing task and that task's worker becoming idle.
	c.workers = pool.New(o.workers, o.workers)
	c.slots = make([]*slot[T], o.workers)
	for i := range c.slots {
		s := &slot[T]{c: c}
		s.run = s.handle
		c.slots[i] = s
		c.free <- s
	}
	go c.loop()
	go c.keep()
	return c, nil
}

// loop receives jobs while a slot is free and hands them to the runner.
func (c *Consumer[T]) loop() {
	defer close(c.loopDone)
	var errDelay time.Duration
	for {
		var s *slot[T]
		select {
		case s = <-c.free:
		case <-c.recv.Done():
			return
		}
		err := c.q.backend.Receive(c.recv, c.opts.lease, &s.d)
		if err != nil {
			c.free <- s
			if c.recv.Err() != nil {
				return
			}
			// A backend failure (broker unreachable): retry with a capped
			// backoff, without spinning.
			errDelay = min(max(2*errDelay, 10*time.Millisecond), 5*time.Second)
			t := time.NewTimer(errDelay)
			select {
			case <-t.C:
			case <-c.recv.Done():
				t.Stop()
				return
			}
			continue
		}
		errDelay = 0
		c.hold(s)
		if c.recv.Err() != nil {
			// Close started while the job was being received.
			c.settle(s, func() error { return c.q.backend.Release(context.WithoutCancel(c.base), &s.d) }, outReturned, Event{})
			return
		}
		if err := c.workers.Submit(c.base, s.run); err != nil {
			c.settle(s, func() error { return c.q.backend.Release(context.WithoutCancel(c.base), &s.d) }, outReturned, Event{})
			return
		}
	}
}

func (c *Consumer[T]) hold(s *slot[T]) {
	c.mu.Lock()
	c.held++
	c.mu.Unlock()
	s.mu.Lock()
	s.holding = true
	s.mu.Unlock()
}

// keep extends the backend leases of held jobs every third of a lease, so
// that a job never expires in the backend while its handler runs (the
// handler's own deadline is enforced by its context).
func (c *Consumer[T]) keep() {
	defer close(c.keepDone)
	t := time.NewTicker(max(c.opts.lease/3, time.Millisecond))
	defer t.Stop()
	ctx := context.WithoutCancel(c.base)
	for {
		select {
		case <-t.C:
		case <-c.recv.Done():
			// Keep extending until the drain ends: Close stops the keeper
			// by cancelling base after the drain.
			select {
			case <-t.C:
			case <-c.base.Done():
				return
			}
		}
		for _, s := range c.slots {
			s.mu.Lock()
			if s.holding {
				_ = c.q.backend.Extend(ctx, &s.d, c.opts.lease)
			}
			s.mu.Unlock()
		}
	}
}

type outcome int

const (
	outAcked outcome = iota
	outRetried
	outReturned
	outDead
)

// handle runs the handler for the job in s and settles it. It is the task
// submitted to the runner.
func (s *slot[T]) handle(context.Context) error {
	c := s.c
	q := c.q
	d := &s.d
	bg := context.WithoutCancel(c.base)
	now := time.Now()
	job, err := q.job(&d.Message)
	if err != nil {
		c.bury(s, ReasonPermanent, Attempt{Number: d.Attempt, Start: now, End: now, Error: err.Error()}, err)
		return nil
	}
	if d.Attempt > c.opts.maxAttempts {
		// The last attempt's lease expired in the backend (its consumer
		// was gone): no attempt left.
		c.bury(s, ReasonAttempts, Attempt{Number: d.Attempt, Start: now, End: now,
			Error: fmt.Sprintf("queue: delivered %d times, max attempts %d", d.Attempt, c.opts.maxAttempts)}, nil)
		return nil
	}
	if d.Attempt == 1 && !d.StartBy.IsZero() && now.After(d.StartBy) {
		c.bury(s, ReasonExpired, Attempt{Number: 1, Start: now, End: now,
			Error: "queue: not started by " + d.StartBy.Format(time.RFC3339Nano)}, nil)
		return nil
	}
	if h := q.hooks.OnStart; h != nil {
		h(Event{ID: d.ID, Key: d.Key, Attempt: d.Attempt})
	}
	hctx, cancel := context.WithDeadlineCause(c.base, now.Add(c.opts.lease), ErrLeaseExpired)
	var (
		returned bool
		herr     error
	)
	defer func() {
		// Runs on return, panic and runtime.Goexit alike.
		var panicErr error
		if !returned {
			if r := recover(); r != nil {
				panicErr = &panicError{value: r, stack: debug.Stack()}
			} else {
				panicErr = errGoexit
			}
		}
		leaseOver := context.Cause(hctx) == ErrLeaseExpired
		shutdown := !leaseOver && c.base.Err() != nil
		cancel()
		a := Attempt{Number: d.Attempt, Start: now, End: time.Now()}
		switch {
		case panicErr != nil:
			a.Error = panicErr.Error()
			c.bury(s, ReasonPanic, a, panicErr)
		case herr == nil:
			c.settle(s, func() error { return q.backend.Ack(bg, d) }, outAcked, Event{})
		case shutdown:
			c.settle(s, func() error { return q.backend.Release(bg, d) }, outReturned, Event{})
		default:
			if leaseOver {
				herr = fmt.Errorf("%w: %w", ErrLeaseExpired, herr)
			}
			a.Error = herr.Error()
			switch {
			case retry.IsPermanent(herr):
				c.bury(s, ReasonPermanent, a, herr)
			case d.Attempt >= c.opts.maxAttempts:
				c.bury(s, ReasonAttempts, a, herr)
			default:
				delay := c.retryDelay(d.Attempt, herr)
				c.settle(s, func() error { return q.backend.Nack(bg, d, delay, a) }, outRetried, Event{Err: herr, Delay: delay})
			}
		}
	}()
	herr = c.h(hctx, job)
	returned = true
	return nil
}

// retryDelay is the redelivery delay after failed attempt n (1-based).
func (c *Consumer[T]) retryDelay(n int, err error) time.Duration {
	if d, ok := retry.Hint(err); ok {
		return c.opts.backoff.Spread(d, n-1)
	}
	return c.opts.backoff.Delay(n-1, 0)
}

func (c *Consumer[T]) bury(s *slot[T], reason Reason, a Attempt, cause error) {
	d := &s.d
	c.settle(s, func() error { return c.q.backend.Bury(context.WithoutCancel(c.base), d, reason, a) },
		outDead, Event{Reason: reason, Err: cause})
}

// settle applies op to the job held by s, counts the outcome, calls its
// hook and frees s. A lost lease (the backend already moved the job on)
// counts as nothing.
func (c *Consumer[T]) settle(s *slot[T], op func() error, out outcome, ev Event) {
	err := op()
	s.mu.Lock()
	s.holding = false
	s.mu.Unlock()
	ev.ID, ev.Key, ev.Attempt = s.d.ID, s.d.Key, s.d.Attempt
	s.d = Delivery{}
	if err == nil {
		hooks := &c.q.hooks
		switch out {
		case outAcked:
			c.q.c.acked.Add(1)
			if h := hooks.OnSuccess; h != nil {
				h(ev)
			}
		case outRetried:
			c.q.c.retried.Add(1)
			if h := hooks.OnRetry; h != nil {
				h(ev)
			}
		case outDead:
			c.q.c.dead[reasonIndex(ev.Reason)].Add(1)
			if h := hooks.OnDead; h != nil {
				h(ev)
			}
		}
	}
	c.mu.Lock()
	if c.closing.Load() && err == nil {
		switch out {
		case outAcked:
			c.report.Acked++
		case outRetried, outReturned:
			c.report.Returned++
		case outDead:
			c.report.DeadLettered++
		}
	}
	c.held--
	if c.held == 0 && c.closing.Load() {
		select {
		case <-c.drained:
		default:
			close(c.drained)
		}
	}
	c.mu.Unlock()
	c.free <- s
}

// Close stops intake, waits for running handlers to finish and returns what
// happened to the jobs in hand. If ctx ends first, Close cancels the
// handlers (their jobs are returned to the backend unattempted), waits up to
// the shutdown grace for them, and reports the ones still running as
// abandoned; it then returns context.Cause(ctx) as well as the report.
// Jobs not yet received stay in the backend. Close is idempotent: later
// calls return ErrClosed.
func (c *Consumer[T]) Close(ctx context.Context) (Report, error) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return Report{}, ErrClosed
	}
	c.closed = true
	c.mu.Lock()
	c.closing.Store(true)
	if c.held == 0 {
		close(c.drained)
	}
	c.mu.Unlock()
	c.recvCancel(ErrClosed)
	<-c.loopDone
	var err error
	select {
	case <-c.drained:
	case <-ctx.Done():
		err = context.Cause(ctx)
		c.baseCancel(&closeCause{cause: err})
		t := time.NewTimer(c.opts.grace)
		select {
		case <-c.drained:
		case <-t.C:
		}
		t.Stop()
	}
	c.baseCancel(ErrClosed)
	<-c.keepDone
	c.mu.Lock()
	c.report.Abandoned = c.held
	r := c.report
	c.mu.Unlock()
	if r.Abandoned == 0 {
		_ = c.workers.Close(context.Background())
	}
	// Else abandoned handlers keep their pool workers: the pool is left to
	// wind down by itself (its workers exit after their idle timeout once
	// the handlers return), since closing it would wait for them.
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
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("queue: handler panicked: %v\n%s", e.value, e.stack)
}

var errGoexit = errors.New("queue: handler called runtime.Goexit")
