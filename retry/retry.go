package retry

import (
	"context"
	"time"

	"github.com/corral-go/corral/backoff"
)

// Defaults of a Policy built without the corresponding option.
const (
	defaultMaxAttempts = 3
	defaultMaxHint     = time.Minute
)

// defaultBackoff is the backoff of a Policy built without the Backoff option: exponential
// from 100ms, doubling, capped at 10s, with full jitter. It is an immutable value.
var defaultBackoff = backoff.Exponential(100*time.Millisecond, 2, 10*time.Second,
	backoff.WithJitter(backoff.FullJitter))

type options struct {
	attempts       int           // 0: defaultMaxAttempts
	maxElapsed     time.Duration // 0: no limit
	attemptTimeout time.Duration // 0: none
	maxHint        time.Duration // 0: defaultMaxHint
	backoff        backoff.Policy
	backoffSet     bool
	retryIf        func(error) bool
	onRetry        func(attempt int, err error, delay time.Duration)
	onGiveUp       func(*Error)
	budget         *Budget
}

// Option configures a [Policy]. A nil Option makes [New] and [Do] panic.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// MaxAttempts bounds the number of attempts, the first included (default 3). It panics if
// n < 1.
func MaxAttempts(n int) Option {
	if n < 1 {
		panic("retry: max attempts must be >= 1")
	}
	return optionFunc(func(o *options) { o.attempts = n })
}

// MaxElapsed bounds the time a call spends, measured from the start of the call (just
// before the first attempt): a retry is never scheduled to start later than d after it; the
// call gives up with ErrMaxElapsed instead of sleeping. Attempts are not interrupted (see
// [AttemptTimeout]): the first attempt always runs, and if it fails after running longer
// than d, the call gives up after it. 0 (the default) means no limit. It panics if d is
// negative.
//
// With MaxElapsed, a call reads the clock once before its first attempt; without it, a
// first attempt that succeeds never reads the clock.
func MaxElapsed(d time.Duration) Option {
	if d < 0 {
		panic("retry: negative max elapsed " + d.String())
	}
	return optionFunc(func(o *options) { o.maxElapsed = d })
}

// AttemptTimeout gives each attempt a context that is canceled with cause ErrAttemptTimeout
// after d (or earlier, if the caller's context ends first). An attempt that fails because of
// its own timeout is retried like any other error, while the caller's context is live.
// 0 (the default) means none. It panics if d is negative.
func AttemptTimeout(d time.Duration) Option {
	if d < 0 {
		panic("retry: negative attempt timeout " + d.String())
	}
	return optionFunc(func(o *options) { o.attemptTimeout = d })
}

// Backoff sets the delays between attempts: retry n (from 0) waits p.Delay(n, previous).
// The default is exponential from 100ms, doubling, capped at 10s, with full jitter; the zero
// backoff.Policy retries without waiting.
func Backoff(p backoff.Policy) Option {
	return optionFunc(func(o *options) { o.backoff, o.backoffSet = p, true })
}

// MaxHint caps a server's hint ([After], [ParseRetryAfter]) (default one minute). A longer
// hint is cut to d: the call retries after d rather than wait for an unbounded time or give
// up. It panics if d is zero or negative: a zero cap would turn every hinted retry into an
// immediate one, ignoring both the server and the backoff, and unlike MaxElapsed(0) it
// cannot mean "no limit" (a hint is always capped). To ignore hints, do not attach them.
func MaxHint(d time.Duration) Option {
	if d < 0 {
		panic("retry: negative max hint " + d.String())
	}
	if d == 0 {
		panic("retry: zero max hint (leave MaxHint out for the default of one minute)")
	}
	return optionFunc(func(o *options) { o.maxHint = d })
}

// If retries an error only if retryable(err) is true. It is consulted after the rules it
// cannot override: nothing is retried once the caller's context is done, and an error
// marked [Permanent] is never retried. Without it, every other error is retried, including
// one that matches context.DeadlineExceeded or context.Canceled while the caller's context
// is live (an http.Client timeout, a dial timeout, the operation's own deadline): reject
// those here if they should not be retried.
func If(retryable func(err error) bool) Option {
	return optionFunc(func(o *options) { o.retryIf = retryable })
}

// OnRetry calls fn before each sleep, with the number of the attempt that failed (from 1),
// its error and the delay chosen before the next attempt. It is not called when the call
// gives up. fn runs on the calling goroutine and must not block for long.
func OnRetry(fn func(attempt int, err error, delay time.Duration)) Option {
	return optionFunc(func(o *options) { o.onRetry = fn })
}

// OnGiveUp calls fn exactly once with the outcome when a call gives up, whatever the
// reason, just before the call returns that same *Error: a place for dead-letter sinks and
// alerts. It is not called when the call succeeds. fn runs on the calling goroutine.
func OnGiveUp(fn func(*Error)) Option {
	return optionFunc(func(o *options) { o.onGiveUp = fn })
}

// WithBudget makes every retry withdraw from b and every successful call deposit into it;
// a refused retry ends the call at once with ErrBudgetExhausted. Share one Budget between
// all the policies that call the same dependency. First attempts are never refused.
func WithBudget(b *Budget) Option {
	return optionFunc(func(o *options) { o.budget = b })
}

// Policy is a reusable retry configuration: build it once with [New] and call [Policy.Do]
// (or [DoValue]) as often as needed. A Policy is immutable and safe for concurrent use; the
// zero Policy uses every default, and so does a nil *Policy (for Do, DoValue and Next alike).
type Policy struct {
	o options
	// loop is set by New when the first attempt cannot take the fast path of Do (it needs
	// a context of its own or the clock); immutable.
	loop bool
}

// New returns a Policy with the given options. It panics if an option is nil.
func New(opts ...Option) *Policy {
	p := &Policy{}
	for _, opt := range opts {
		if opt == nil {
			panic("retry: nil option")
		}
		opt.apply(&p.o)
	}
	p.loop = p.o.attemptTimeout > 0 || p.o.maxElapsed > 0
	return p
}

var zeroPolicy Policy

// checkArgs panics, with a message that names the culprit, on the programmer errors that
// would otherwise surface as a bare nil dereference somewhere inside the loop.
func checkArgs(ctx context.Context, hasOp bool) {
	if ctx == nil {
		panic("retry: nil context")
	}
	if !hasOp {
		panic("retry: nil operation")
	}
}

// Do calls op until it succeeds or the policy gives up, and returns nil or an [*Error].
// It is New(opts...).Do(ctx, op), for one-off calls; hot paths should reuse a Policy.
// It panics if ctx, op or an option is nil.
func Do(ctx context.Context, op func(context.Context) error, opts ...Option) error {
	return New(opts...).Do(ctx, op)
}

// Do calls op until it succeeds or the policy gives up. It returns nil on success, otherwise
// an [*Error] that says why it gave up and keeps every attempt's error.
//
// Each attempt gets ctx, or with [AttemptTimeout] a child of ctx with that timeout. Do never
// starts an attempt once ctx is done and never sleeps past ctx's deadline: if the next
// attempt would start at or after it, Do gives up at once with ErrMaxElapsed and the last
// error. When ctx ends during a sleep, Do returns at once with ErrCanceled, the cause and
// the last error; when it ends during an attempt that then fails, Do gives up with
// ErrCanceled after that attempt, whatever its error. Only ctx's state decides this: an
// attempt that fails with a context error of its own while ctx is live is retried.
//
// A first attempt that succeeds costs one check of ctx.Err and no allocation (with
// MaxElapsed, one clock read; with AttemptTimeout, the attempt's context costs a few
// allocations). A call that gives up allocates its *Error.
//
// A nil p is the zero Policy (all defaults). Do panics if ctx or op is nil.
func (p *Policy) Do(ctx context.Context, op func(context.Context) error) error {
	if ctx == nil || op == nil {
		checkArgs(ctx, op != nil)
	}
	if p == nil {
		p = &zeroPolicy
	}
	if !p.loop && ctx.Err() == nil {
		err := op(ctx)
		if err == nil {
			p.succeeded()
			return nil
		}
		return p.run(ctx, op, err)
	}
	return p.run(ctx, op, nil)
}

// DoValue is the value-returning form of [Policy.Do]: it returns op's value from the attempt
// that succeeded, or the zero T and an [*Error]. A nil p is the zero Policy (all defaults).
// It panics if ctx or op is nil.
func DoValue[T any](ctx context.Context, p *Policy, op func(context.Context) (T, error)) (T, error) {
	if ctx == nil || op == nil {
		checkArgs(ctx, op != nil)
	}
	if p == nil {
		p = &zeroPolicy
	}
	var v T
	var err error
	if !p.loop && ctx.Err() == nil {
		if v, err = op(ctx); err == nil {
			p.succeeded()
			return v, nil
		}
	}
	err = p.run(ctx, func(ctx context.Context) error {
		var e error
		v, e = op(ctx)
		return e
	}, err)
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// Next is the decision Do makes after a failed attempt while the caller's context is live,
// for a caller that does not loop in-process (a job queue that redelivers with a delay).
// attempts is the number of attempts made so far (from 1), prev the delay chosen before the
// last one (0 for none), and err the last attempt's error. Next returns the delay before the
// next attempt and a nil reason, or the reason to give up: ErrPermanent (marked [Permanent]
// or rejected by [If]) or ErrMaxAttempts. A hint from [After] replaces the backoff delay as
// in Do.
//
// Next has no context: like Do, it does not judge an error by whether it matches
// context.Canceled or context.DeadlineExceeded (such an error is retried unless If rejects
// it). A caller whose own context is done stops without asking Next, as Do does.
//
// Next is pure apart from randomness: it consults neither the clock, nor MaxElapsed, nor
// the budget (call [Budget.Withdraw] and [Budget.Deposit] yourself). It panics if err is nil.
// A nil p is the zero Policy.
func (p *Policy) Next(attempts int, prev time.Duration, err error) (time.Duration, error) {
	if err == nil {
		panic("retry: Next with a nil error")
	}
	if p == nil {
		p = &zeroPolicy
	}
	return p.decide(max(attempts, 1), prev, err)
}

// decide classifies the error of attempt number made (from 1) and picks the next delay.
// The caller has checked that its context is live: a context error in err is the
// operation's own (an attempt timeout, a client or dial timeout) and retryable.
func (p *Policy) decide(made int, prev time.Duration, err error) (time.Duration, error) {
	o := &p.o
	c := classify(err)
	if c.permanent {
		return 0, ErrPermanent
	}
	if o.retryIf != nil && !o.retryIf(err) {
		return 0, ErrPermanent
	}
	attempts := o.attempts
	if attempts == 0 {
		attempts = defaultMaxAttempts
	}
	if made >= attempts {
		return 0, ErrMaxAttempts
	}
	bo := &defaultBackoff
	if o.backoffSet {
		bo = &o.backoff
	}
	if c.hinted {
		maxHint := o.maxHint
		if maxHint == 0 {
			maxHint = defaultMaxHint
		}
		return bo.Spread(min(c.hint, maxHint), made-1), nil
	}
	return bo.Delay(made-1, prev), nil
}

// run is the retry loop. If first is non-nil, one attempt already ran and failed with it
// (only when p.loop is false: no MaxElapsed, so no start time is needed). Attempt errors
// collect in a stack array; the *Error is allocated only when giving up.
func (p *Policy) run(ctx context.Context, op func(context.Context) error, first error) error {
	o := &p.o
	var local [4]error
	errs := local[:0]
	var start time.Time // start of the call, read only with MaxElapsed
	err := first
	if err == nil {
		if o.maxElapsed > 0 {
			start = time.Now()
		}
		if ctx.Err() != nil {
			return p.giveUp(errs, ErrCanceled, context.Cause(ctx))
		}
		if err = p.attempt(ctx, op); err == nil {
			p.succeeded()
			return nil
		}
	}
	var (
		prev  time.Duration
		timer *time.Timer
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		errs = append(errs, err)
		if ctx.Err() != nil {
			return p.giveUp(errs, ErrCanceled, context.Cause(ctx))
		}
		delay, reason := p.decide(len(errs), prev, err)
		if reason != nil {
			return p.giveUp(errs, reason, nil)
		}
		deadline, hasDeadline := ctx.Deadline()
		if o.maxElapsed > 0 || hasDeadline {
			next := time.Now().Add(delay)
			if o.maxElapsed > 0 && next.Sub(start) > o.maxElapsed {
				return p.giveUp(errs, ErrMaxElapsed, nil)
			}
			if hasDeadline && !next.Before(deadline) {
				return p.giveUp(errs, ErrMaxElapsed, context.DeadlineExceeded)
			}
		}
		if o.budget != nil && !o.budget.Withdraw() {
			return p.giveUp(errs, ErrBudgetExhausted, nil)
		}
		if o.onRetry != nil {
			o.onRetry(len(errs), err, delay)
		}
		if delay > 0 {
			if timer == nil {
				timer = time.NewTimer(delay)
			} else {
				timer.Reset(delay)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				return p.giveUp(errs, ErrCanceled, context.Cause(ctx))
			}
		}
		if ctx.Err() != nil {
			return p.giveUp(errs, ErrCanceled, context.Cause(ctx))
		}
		prev = delay
		if err = p.attempt(ctx, op); err == nil {
			p.succeeded()
			return nil
		}
	}
}

// attempt runs op once, with the per-attempt timeout if there is one.
func (p *Policy) attempt(ctx context.Context, op func(context.Context) error) error {
	if p.o.attemptTimeout <= 0 {
		return op(ctx)
	}
	actx, cancel := context.WithTimeoutCause(ctx, p.o.attemptTimeout, ErrAttemptTimeout)
	defer cancel()
	return op(actx)
}

func (p *Policy) succeeded() {
	if b := p.o.budget; b != nil {
		b.Deposit()
	}
}

func (p *Policy) giveUp(errs []error, reason, cause error) error {
	e := &Error{Reason: reason, Attempts: len(errs), Cause: cause}
	n := len(errs)
	if cause != nil {
		n++
	}
	if n <= len(e.buf) {
		e.list = e.buf[:0]
	} else {
		e.list = make([]error, 0, n)
	}
	e.list = append(e.list, errs...)
	if cause != nil {
		e.list = append(e.list, cause)
	}
	if fn := p.o.onGiveUp; fn != nil {
		fn(e)
	}
	return e
}
