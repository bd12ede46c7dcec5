package scope

// A Policy decides what a scope does when one of its tasks ends. It is the one extension point
// for completion semantics; FailFast, Supervise and FirstSuccess return Policies, and are the
// constructors WithPolicy takes: scope.WithPolicy(scope.Supervise).
//
// Decide is called once for every task that ends, with nil if the task succeeded, or its
// failure: a *TaskError (an error, or ErrGoexit) or, with ReturnPanics, a *PanicError. A task
// that only returned its scope's cancellation (ctx.Err() or context.Cause(ctx) after the scope
// was cancelled) has neither succeeded nor failed, and Decide is not called for it, nor for
// skipped tasks.
//
// Decide returns whether to cancel the scope, and whether to report the failure in Run's error.
// Cancelling on a failure makes that failure the cancellation cause and the root cause in Run's
// error. Cancelling on a success completes the scope: the remaining tasks are cancelled and
// Run reports no task failure (earlier ones are dropped). report is ignored on success.
//
// The scope calls Decide serially, never concurrently for one scope, while holding its own lock:
// Decide must be quick and must not call the scope. WithPolicy takes a constructor, which Run
// calls once per scope, so a Policy that keeps state (a count of successes, say) gets a fresh
// value for each scope and needs no lock.
type Policy interface {
	Decide(failure error) (cancel, report bool)
}

// FailFast is the default policy: the first failure cancels the scope and every failure is
// reported, that one first.
func FailFast() Policy { return failFast{} }

// Supervise reports every failure and cancels nothing: siblings of a failed task keep running.
func Supervise() Policy { return supervise{} }

// FirstSuccess completes the scope when a task first succeeds: the other tasks are cancelled
// and Run reports no task failure. If no task succeeds, every failure is reported. First runs
// a list of typed tasks under this policy and returns the winner's value.
func FirstSuccess() Policy { return firstSuccess{} }

type failFast struct{}

func (failFast) Decide(failure error) (cancel, report bool) { return failure != nil, true }

type supervise struct{}

func (supervise) Decide(failure error) (cancel, report bool) { return false, true }

type firstSuccess struct{}

func (firstSuccess) Decide(failure error) (cancel, report bool) { return failure == nil, true }
