package scope

// A Joiner decides what a scope does when one of its tasks ends: whether to cancel the rest,
// and whether to report the failure in Run's error. It is the one extension point for
// completion semantics (Java's structured concurrency calls it the same). FailFast, Supervise
// and FirstSuccess return Joiners, and are the constructors WithJoiner takes:
// scope.WithJoiner(scope.Supervise).
type Joiner interface {
	// Decide is called once for every task that ends, with nil if the task succeeded, or its
	// failure: a *TaskError (an error, or ErrGoexit) or, with WithPanicsAsErrors, a
	// *PanicError. A task that only returned its scope's cancellation (ctx.Err() or
	// context.Cause(ctx) after the scope was cancelled) has neither succeeded nor failed, and
	// Decide is not called for it, nor for skipped tasks.
	//
	// Decide returns whether to cancel the scope, and whether to report the failure in Run's
	// error. Cancelling on a failure makes that failure the cancellation cause and the root
	// cause in Run's error. Cancelling on a success completes the scope: the remaining tasks
	// are cancelled and Run reports no task failure (earlier ones are dropped). report is
	// ignored on success. The first such success completes the scope even if it was cancelled
	// from outside (its parent ctx, WithTimeout) before; once the scope has cancelled itself
	// (a failure, the body's failure, a task panic), no success completes it.
	//
	// The scope calls Decide serially, never concurrently for one scope, while holding its own
	// lock: Decide must be quick, must not call the scope and must not call runtime.Goexit. A
	// panic in Decide is recovered (the lock is released as usual): it cancels the scope, with
	// a *PanicError (Name "Joiner", Index -1) as the cause, and Run raises that *PanicError in
	// its caller's goroutine once every task has returned, as it does a task's panic, even
	// with WithPanicsAsErrors; the failure Decide was given, if any, is reported and carried
	// like any other. Later outcomes still go to Decide. WithJoiner takes a constructor, which
	// Run calls once per scope, so a Joiner that keeps state (a count of successes, say) gets
	// a fresh value for each scope and needs no lock.
	Decide(failure error) (cancel, report bool)
}

// FailFast is the default Joiner: the first failure cancels the scope and every failure is
// reported, that one first.
func FailFast() Joiner { return failFast{} }

// Supervise reports every failure and cancels nothing: siblings of a failed task keep running.
// Errors lists the failures Run then returns.
func Supervise() Joiner { return supervise{} }

// FirstSuccess completes the scope when a task first succeeds: the other tasks are cancelled
// and Run reports no task failure. If no task succeeds, every failure is reported. First runs
// a list of typed tasks under this Joiner and returns the winner's value.
func FirstSuccess() Joiner { return firstSuccess{} }

type failFast struct{}

func (failFast) Decide(failure error) (cancel, report bool) { return failure != nil, true }

type supervise struct{}

func (supervise) Decide(failure error) (cancel, report bool) { return false, true }

type firstSuccess struct{}

func (firstSuccess) Decide(failure error) (cancel, report bool) { return failure == nil, true }
