package retry

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/internal/hooks"
)

// Defaults of a Policy built without the corresponding option.
const (
	defaultMaxAttempts = 3
	defaultMaxHint     = time.Minute
)

// defaultBackoff is the backoff of a Policy built without WithBackoff: exponential
// from 100ms, doubling, capped at 10s, with full jitter. It is an immutable value.
var defaultBackoff = backoff.Exponential(100*time.Millisecond, 2, 10*time.Second,
	backoff.WithJitter(backoff.FullJitter))

type options struct {
	attempts       int           // 0: defaultMaxAttempts
	maxElapsed     time.Duration // 0: no limit
	attemptTimeout time.Duration // 0: none
	maxHint        time.Duration // 0: defaultMaxHint
	backoff        backoff.Schedule
	backoffSet     bool
	retryIf        func(error) bool
	hooks          Hooks
	budget         *Budget
	logger         *slog.Logger // WithLogger
}

// Option configures a [Policy]; options are applied in order, and a later option of the same
// kind replaces an earlier one. A nil Option makes [New] panic.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithMaxAttempts bounds the number of attempts, the first included. The default is 3: a retry
// holds its caller, who waits for every attempt and every delay, so attempts are few and
// delays short (milliseconds to seconds). A job queue's default is higher (10 for queue's
// consumer) because a job holds no caller and its retries are spread over minutes by its
// backoff. It panics if n < 1.
func WithMaxAttempts(n int) Option {
	if n < 1 {
		panic("retry: WithMaxAttempts(" + strconv.Itoa(n) + "): need at least 1")
	}
	return optionFunc(func(o *options) { o.attempts = n })
}

// WithMaxElapsed bounds the time a call spends, measured from the start of the call (just
// before the first attempt): a retry is never scheduled to start later than d after it; the
// call gives up with ErrMaxElapsed instead of sleeping. Attempts are not interrupted (see
// [WithAttemptTimeout]): the first attempt always runs, and if it fails after running longer
// than d, the call gives up after it. 0 (the default) means no limit. It panics if d is
// negative.
//
// With WithMaxElapsed, a call reads the clock once before its first attempt; without it, a
// first attempt that succeeds never reads the clock.
func WithMaxElapsed(d time.Duration) Option {
	if d < 0 {
		panic("retry: WithMaxElapsed(" + d.String() + "): negative duration")
	}
	return optionFunc(func(o *options) { o.maxElapsed = d })
}

// WithAttemptTimeout gives each attempt a context that is canceled with cause
// ErrAttemptTimeout after d (or earlier, if the caller's context ends first). An attempt that
// fails because of its own timeout is retried like any other error, while the caller's
// context is live. 0 (the default) means none. It panics if d is negative.
func WithAttemptTimeout(d time.Duration) Option {
	if d < 0 {
		panic("retry: WithAttemptTimeout(" + d.String() + "): negative duration")
	}
	return optionFunc(func(o *options) { o.attemptTimeout = d })
}

// WithBackoff sets the delays between attempts: retry n (from 0) waits s.Delay(n, previous).
// The default is exponential from 100ms, doubling, capped at 10s, with full jitter; the zero
// backoff.Schedule retries without waiting.
func WithBackoff(s backoff.Schedule) Option {
	return optionFunc(func(o *options) { o.backoff, o.backoffSet = s, true })
}

// WithMaxHint caps a server's hint ([After], [ParseRetryAfter]) (default one minute). A longer
// hint is cut to d: the call retries after d rather than wait for an unbounded time or give
// up. It panics if d is zero or negative: a zero cap would turn every hinted retry into an
// immediate one, ignoring both the server and the backoff, and unlike WithMaxElapsed(0) it
// cannot mean "no limit" (a hint is always capped). To ignore hints, do not attach them.
func WithMaxHint(d time.Duration) Option {
	if d < 0 {
		panic("retry: WithMaxHint(" + d.String() + "): negative duration")
	}
	if d == 0 {
		panic("retry: WithMaxHint(0s): zero cap (leave WithMaxHint out for the default of one minute)")
	}
	return optionFunc(func(o *options) { o.maxHint = d })
}

// WithRetryIf retries an error only if retryable(err) is true. It is consulted after the
// rules it cannot override: nothing is retried once the caller's context is done, and an error
// marked [Permanent] is never retried. Without it, every other error is retried, including
// one that matches context.DeadlineExceeded or context.Canceled while the caller's context
// is live (an http.Client timeout, a dial timeout, the operation's own deadline): reject
// those here if they should not be retried. It panics if retryable is nil.
func WithRetryIf(retryable func(err error) bool) Option {
	if retryable == nil {
		panic("retry: WithRetryIf(nil): nil predicate")
	}
	return optionFunc(func(o *options) { o.retryIf = retryable })
}

// WithHooks sets the functions a Policy calls as its calls retry and give up (see [Hooks]).
// A later WithHooks replaces an earlier one whole. Hooks that are not set cost nothing.
func WithHooks(h Hooks) Option {
	return optionFunc(func(o *options) { o.hooks = h })
}

// WithBudget makes every retry withdraw from b and every successful call deposit into it;
// a refused retry ends the call at once with ErrBudgetExhausted. Share one Budget between
// all the policies that call the same dependency. First attempts are never refused. A nil b
// means no budget, as without the option.
func WithBudget(b *Budget) Option {
	return optionFunc(func(o *options) { o.budget = b })
}

// Hooks are the functions a [Policy] calls as a call goes; set them with [WithHooks]. A nil
// field is not called, and costs nothing. Each hook receives the context of the call it
// reports on (the ctx given to [Do] or [DoValue], not an attempt's), so that a Policy shared
// by many calls tells them apart by the context's values. Hooks run on the calling goroutine,
// synchronously, and should return quickly. A hook's panic is not recovered: it goes up
// through Do to the caller.
type Hooks struct {
	// OnRetry is called after an attempt failed and before the sleep that precedes the next
	// one, once the call has decided to retry (the budget, if any, has paid for it). It is not
	// called when the call gives up. Setting it makes each attempt read the clock as it
	// starts, and a failed one again as it ends, for RetryEvent.Duration.
	OnRetry func(ctx context.Context, e RetryEvent)
	// OnGiveUp is called exactly once when a call gives up, whatever the reason, with the
	// *Error that the call then returns: a place for dead-letter sinks and alerts. It is not
	// called when the call succeeds.
	OnGiveUp func(ctx context.Context, e *Error)
}

// RetryEvent describes an attempt that failed and will be retried, for [Hooks].OnRetry. It
// implements slog.LogValuer, so slog.InfoContext(ctx, "retrying", "event", e) logs its fields.
type RetryEvent struct {
	// Attempt is the number of the attempt that failed, from 1.
	Attempt int
	// Err is the error the attempt returned.
	Err error
	// Delay is the delay chosen before the next attempt: the backoff's, or a server's hint.
	Delay time.Duration
	// Duration is how long the failed attempt ran.
	Duration time.Duration
}

// LogValue returns a group of the event's non-zero fields: attempt, err, delay and duration.
func (e RetryEvent) LogValue() slog.Value {
	return hooks.NonZero(slog.Int("attempt", e.Attempt), slog.Any("err", e.Err), slog.Duration("delay", e.Delay),
		slog.Duration("duration", e.Duration))
}

// Policy is a reusable retry configuration: build it once with [New] and pass it to [Do] or
// [DoValue] as often as needed. A Policy is immutable and safe for concurrent use. The zero
// Policy is ready to use, with every default, and so is a nil *Policy (for Do, DoValue and
// Next alike).
type Policy struct {
	o options
	// loop is set by New when the first attempt cannot take the fast path of Do (it needs
	// a context of its own or the clock); immutable.
	loop bool
	// timed: attempts are timed, for the RetryEvent.Duration of a Hooks.OnRetry set by
	// WithHooks (not WithLogger's); immutable.
	timed bool
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
	p.timed = p.o.hooks.OnRetry != nil
	p.o.hooks = p.o.logHooks() // after timed: logging does not time attempts
	p.loop = p.o.attemptTimeout > 0 || p.o.maxElapsed > 0 || p.timed
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

// Do calls op until it succeeds or p gives up. It returns nil on success, otherwise an
// [*Error] that says why it gave up and keeps every attempt's error. A nil p is the zero
// Policy: every default. [DoValue] is the same call for an operation that returns a value.
//
// Each attempt gets ctx, or with [WithAttemptTimeout] a child of ctx with that timeout. Do
// never starts an attempt once ctx is done and never sleeps past ctx's deadline: if the next
// attempt would start at or after it, Do gives up at once with ErrMaxElapsed and the last
// error. When ctx ends during a sleep, Do returns at once with ErrCanceled, the cause and
// the last error; when it ends during an attempt that then fails, Do gives up with
// ErrCanceled after that attempt, whatever its error. Only ctx's state decides this: an
// attempt that fails with a context error of its own while ctx is live is retried.
//
// A first attempt that succeeds does not allocate, unless WithAttemptTimeout gives it a
// context of its own. A call that gives up allocates its *Error.
//
// Do panics if ctx or op is nil.
func Do(ctx context.Context, p *Policy, op func(context.Context) error) error {
	// One compare on the hot path; the panics and their messages live out of line in
	// checkArgs, which keeps Do's body small (RetrySuccess measures this path).
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

// DoValue is [Do] for an operation that returns a value: it returns op's value from the
// attempt that succeeded, or the zero T and an [*Error]. It takes the same arguments in the
// same order, retries by the same rules and costs the same. A nil p is the zero Policy (every
// default). It panics if ctx or op is nil.
func DoValue[T any](ctx context.Context, p *Policy, op func(context.Context) (T, error)) (T, error) {
	if ctx == nil || op == nil { // as in Do

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
// or rejected by [WithRetryIf]) or ErrMaxAttempts. A hint from [After] replaces the backoff
// delay as in Do.
//
// Next has no context: like Do, it does not judge an error by whether it matches
// context.Canceled or context.DeadlineExceeded (such an error is retried unless the
// WithRetryIf predicate rejects it). A caller whose own context is done stops without asking
// Next, as Do does.
//
// Next is pure apart from randomness: it consults neither the clock, nor WithMaxElapsed, nor
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
// (only when p.loop is false: no WithMaxElapsed, so no start time is needed). Attempt errors
// collect in a stack array; the *Error is allocated only when giving up.
func (p *Policy) run(ctx context.Context, op func(context.Context) error, first error) error {
	o := &p.o
	var local [4]error
	errs := local[:0]
	var start time.Time   // start of the call, read only with WithMaxElapsed
	var ran time.Duration // how long the last attempt ran, measured only with Hooks.OnRetry
	err := first
	if err == nil {
		if o.maxElapsed > 0 {
			start = time.Now()
		}
		if ctx.Err() != nil {
			return p.giveUp(ctx, errs, ErrCanceled, context.Cause(ctx))
		}
		if ran, err = p.attempt(ctx, op); err == nil {
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
		delay, out := p.plan(ctx, errs, prev, start, ran)
		if out != nil {
			return out
		}
		if delay > 0 && !sleep(ctx, &timer, delay) {
			return p.giveUp(ctx, errs, ErrCanceled, context.Cause(ctx))
		}
		if ctx.Err() != nil {
			return p.giveUp(ctx, errs, ErrCanceled, context.Cause(ctx))
		}
		prev = delay
		if ran, err = p.attempt(ctx, op); err == nil {
			p.succeeded()
			return nil
		}
	}
}

// plan decides, after the attempts whose errors are errs failed, how long to wait before the
// next one, or gives up and returns the call's outcome. prev is the previous delay, start the
// start of the call (read only with WithMaxElapsed), ran how long the last attempt ran (for
// Hooks.OnRetry, which plan calls once it has decided to retry).
func (p *Policy) plan(ctx context.Context, errs []error, prev time.Duration, start time.Time, ran time.Duration) (time.Duration, error) {
	o := &p.o
	err := errs[len(errs)-1]
	if ctx.Err() != nil {
		return 0, p.giveUp(ctx, errs, ErrCanceled, context.Cause(ctx))
	}
	delay, reason := p.decide(len(errs), prev, err)
	if reason != nil {
		return 0, p.giveUp(ctx, errs, reason, nil)
	}
	deadline, hasDeadline := ctx.Deadline()
	if o.maxElapsed > 0 || hasDeadline {
		next := time.Now().Add(delay)
		if o.maxElapsed > 0 && next.Sub(start) > o.maxElapsed {
			return 0, p.giveUp(ctx, errs, ErrMaxElapsed, nil)
		}
		if hasDeadline && !next.Before(deadline) {
			return 0, p.giveUp(ctx, errs, ErrMaxElapsed, context.DeadlineExceeded)
		}
	}
	if o.budget != nil && !o.budget.Withdraw() {
		return 0, p.giveUp(ctx, errs, ErrBudgetExhausted, nil)
	}
	if o.hooks.OnRetry != nil {
		o.hooks.OnRetry(ctx, RetryEvent{Attempt: len(errs), Err: err, Delay: delay, Duration: ran})
	}
	return delay, nil
}

// sleep waits for delay on *timer (made on first use, then reset) and reports true, or false
// if ctx ends first.
func sleep(ctx context.Context, timer **time.Timer, delay time.Duration) bool {
	if *timer == nil {
		*timer = time.NewTimer(delay)
	} else {
		(*timer).Reset(delay)
	}
	select {
	case <-(*timer).C:
		return true
	case <-ctx.Done():
		return false
	}
}

// attempt runs op once and returns its error and, if the Policy is timed, how long it ran
// (else 0).
func (p *Policy) attempt(ctx context.Context, op func(context.Context) error) (time.Duration, error) {
	if !p.timed {
		return 0, p.try(ctx, op)
	}
	began := time.Now()
	err := p.try(ctx, op)
	return time.Since(began), err
}

// try runs op once, with the per-attempt timeout if there is one.
func (p *Policy) try(ctx context.Context, op func(context.Context) error) error {
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

// giveUp builds the outcome of the call with ctx and hands it to Hooks.OnGiveUp.
func (p *Policy) giveUp(ctx context.Context, errs []error, reason, cause error) error {
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
	e.hideNestedReasons()
	if fn := p.o.hooks.OnGiveUp; fn != nil {
		fn(ctx, e)
	}
	return e
}
