package scope

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// An Option configures a scope. Options are applied in order; a later option of the same kind
// wins. A nil Option makes Run (and First, Map, MapSeq) panic.
type Option interface{ apply(*options) }

type options struct {
	limit        int
	timeout      time.Duration
	timeoutSet   bool
	newJoiner    func() Joiner // nil: FailFast
	returnPanics bool
	stuckGrace   time.Duration
	stuckReport  func(ctx context.Context, running []string)
	logger       *slog.Logger // WithLogger
	published    func()       // test hook: a task's end was published (export_test.go)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithLimit bounds the number of tasks of the scope that run at once to n. When n tasks are
// running, Go blocks until one returns or the scope is cancelled (then the task is skipped),
// and TryGo returns false. A task's slot is free again by the time its Handle resolves, so a
// TryGo after a Handle.Wait that left fewer than n tasks running succeeds. WithLimit(0) means
// no limit, the default of Run. A negative n panics.
//
// A bounded scope runs its tasks on at most n reused goroutines. A task that calls Go (or waits
// on a Handle) in its own bounded scope holds a slot while it waits: if every running task does
// that, none can proceed until the scope is cancelled (WithTimeout, the parent, a failure
// elsewhere), and then the tasks they wanted to start are skipped. The scope cannot tell that
// wait from any other, so it does not detect the deadlock. Tasks that start tasks should use
// TryGo, or the limit should leave room.
func WithLimit(n int) Option {
	if n < 0 {
		panic("scope: WithLimit(" + strconv.Itoa(n) + "): negative limit")
	}
	return optionFunc(func(o *options) { o.limit = n })
}

// WithTimeout cancels the scope d after Run starts. The cancellation cause matches ErrTimeout
// and context.DeadlineExceeded and says how long the timeout was. A d <= 0 cancels the scope
// at once, as context.WithTimeout does.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.timeout = d; o.timeoutSet = true })
}

// WithJoiner sets the Joiner of the scope, which decides as each task ends whether to cancel
// and what to report; the default is FailFast. Run calls newJoiner once, as it starts, and the
// scope alone uses the Joiner it returns: a Joiner may keep state for one scope without a
// lock, and options that hold WithJoiner can be reused by any number of Runs, one after
// another or at once. FailFast, Supervise and FirstSuccess are such constructors:
//
//	scope.Run(ctx, body, scope.WithJoiner(scope.Supervise))
//
// A nil newJoiner panics, and so does Run if newJoiner returns nil.
func WithJoiner(newJoiner func() Joiner) Option {
	if newJoiner == nil {
		panic("scope: WithJoiner(nil): nil constructor")
	}
	return optionFunc(func(o *options) { o.newJoiner = newJoiner })
}

// WithPanicsAsErrors makes a task panic a failure like a returned error: a *PanicError handed
// to the Joiner and returned by Run, instead of being re-raised in the goroutine that called
// Run.
func WithPanicsAsErrors() Option {
	return optionFunc(func(o *options) { o.returnPanics = true })
}

// WithStuckReport reports tasks that do not stop: when the scope has been cancelled and its
// body has returned, and tasks are still running grace later, Run calls report once, on the
// goroutine that called Run, with the scope's context and the tasks still running, in start
// order: a task started by GoNamed by its name as given (not quoted), any other as "#" and its
// start index (see TaskError.Index), such as "#3". The context is the one the tasks got: it
// carries the values of Run's ctx, and context.Cause tells why the scope was cancelled. Run
// then goes on waiting for them. Tracking running tasks costs a lock when each task starts and
// ends. A nil report or a negative grace panics.
//
// A panic in report does not cut the wait short: Run goes on waiting for every task, then
// panics with a *PanicError for the report's panic (Name "StuckReport", Index -1) that carries
// every failure of the scope, as a task's panic would; if a task's panic is re-raised, that
// one comes first and carries the report's. If report calls runtime.Goexit (t.Fatal in a
// test), Run still waits for every task before the Goexit ends its goroutine, as when the
// body calls Goexit.
func WithStuckReport(grace time.Duration, report func(ctx context.Context, running []string)) Option {
	if report == nil {
		panic("scope: WithStuckReport(" + grace.String() + ", nil): nil report")
	}
	if grace < 0 {
		panic("scope: WithStuckReport(" + grace.String() + ", ...): negative grace")
	}
	return optionFunc(func(o *options) { o.stuckGrace, o.stuckReport = grace, report })
}
