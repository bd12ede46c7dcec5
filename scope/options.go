package scope

import "time"

// An Option configures a scope. Options are applied in order; a later option of the same kind
// wins.
type Option interface{ apply(*options) }

type options struct {
	limit        int
	timeout      time.Duration
	timeoutSet   bool
	newPolicy    func() Policy // nil: FailFast
	returnPanics bool
	stuckGrace   time.Duration
	stuckReport  func(running []string)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// Limit bounds the number of tasks of the scope that run at once to n. When n tasks are
// running, Go blocks until one returns or the scope is cancelled (then the task is skipped),
// and TryGo returns false. Limit(0) means no limit, the default of Run. A negative n panics.
//
// A bounded scope runs its tasks on at most n reused goroutines. A task that calls Go (or waits
// on a Handle) in its own bounded scope holds a slot while it waits: if every running task does
// that, none can proceed until the scope is cancelled (a Timeout, the parent, a failure
// elsewhere), and then the tasks they wanted to start are skipped. The scope cannot tell that
// wait from any other, so it does not detect the deadlock. Tasks that start tasks should use
// TryGo, or the limit should leave room.
func Limit(n int) Option {
	if n < 0 {
		panic("scope: negative limit")
	}
	return optionFunc(func(o *options) { o.limit = n })
}

// Timeout cancels the scope d after Run starts. The cancellation cause matches ErrTimeout and
// context.DeadlineExceeded and says how long the timeout was. A d <= 0 cancels the scope at once.
func Timeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.timeout = d; o.timeoutSet = true })
}

// WithPolicy sets the completion policy of the scope; the default is FailFast. Run calls
// newPolicy once, as it starts, and the scope alone uses the Policy it returns: a Policy may
// keep state for one scope without a lock, and options that hold WithPolicy can be reused by
// any number of Runs, one after another or at once. FailFast, Supervise and FirstSuccess are
// such constructors:
//
//	scope.Run(ctx, body, scope.WithPolicy(scope.Supervise))
//
// A nil newPolicy panics, and so does Run if newPolicy returns nil.
func WithPolicy(newPolicy func() Policy) Option {
	if newPolicy == nil {
		panic("scope: nil policy")
	}
	return optionFunc(func(o *options) { o.newPolicy = newPolicy })
}

// ReturnPanics makes a task panic a failure like a returned error: a *PanicError handed to the
// policy and returned by Run, instead of being re-raised in the goroutine that called Run.
func ReturnPanics() Option {
	return optionFunc(func(o *options) { o.returnPanics = true })
}

// OnStuck reports tasks that do not stop: when the scope has been cancelled and its body has
// returned, and tasks are still running grace later, Run calls report once, on the goroutine
// that called Run, with the tasks still running, in start order: a task started by GoNamed by
// its name as given (not quoted), any other as "#" and its start index (see TaskError.Index),
// such as "#3". Run then goes on waiting for them. Tracking running tasks costs a lock when
// each task starts and ends. A nil report or a negative grace panics.
func OnStuck(grace time.Duration, report func(running []string)) Option {
	if report == nil {
		panic("scope: nil stuck report")
	}
	if grace < 0 {
		panic("scope: negative grace")
	}
	return optionFunc(func(o *options) { o.stuckGrace, o.stuckReport = grace, report })
}
