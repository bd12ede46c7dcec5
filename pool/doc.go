// Package pool runs tasks on a bounded set of reused goroutines with a bounded queue, and
// makes what happens at the bounds explicit.
//
// A Pool has at most N workers and at most Q queued tasks. When both are full, the pool's
// Overflow decides: Block (wait, cancellable by the submitter's context, first come first
// served), Reject (ErrFull), DropNewest (refuse the incoming task), DropOldest (evict the
// oldest queued task) or CallerRuns (run it for the submitter, which waits for it). Nothing
// is lost silently: every dropped task is counted in Stats and passed to Hooks.OnDrop with its
// Reason, and its Handle or Group learns why.
//
//	p := pool.New(8, 1024, pool.WithOverflow(pool.Reject))
//	defer p.Close(context.Background())
//	if err := p.Submit(ctx, func(ctx context.Context) error { return work(ctx) }); err != nil {
//		// errors.Is(err, pool.ErrFull): shed load
//	}
//
// Task contexts. A task runs with a context that carries the values of the context it was
// submitted with and ends when that context ends or when the pool is shut down (Close gave up
// waiting), with a cause matching ErrClosed. A task whose context is already done when a
// worker picks it up is skipped, not run ("expired in queue"). A task's context may end once
// the task has returned, so work handed on from a task should not rely on it (see
// Pool.Submit).
//
// Results. Submit takes a func(ctx) error and does not allocate; its failures are counted and
// go to Hooks.OnError, with how long the task ran. Call returns a Handle whose Wait gives the
// task's value and error. Group gives structured, fail-fast semantics over the shared pool; a
// task may wait on a group of its own pool without deadlocking it.
//
// Failures. A task's panic is recovered: the task fails with a *PanicError (value and stack)
// and the worker carries on. A task that calls runtime.Goexit fails too, with ErrGoexit; its
// worker is replaced, and a task run for its caller (CallerRuns, Group) runs on a goroutine of
// its own, so that the Goexit does not end the caller.
//
// Shutdown. Close(ctx) stops intake, runs the queue dry and waits for every task and worker.
// If ctx ends first, it abandons what is still queued (reported as dropped, ReasonShutdown),
// cancels running tasks and says how many in its error. Idle workers exit after an idle
// timeout, so an idle pool holds no goroutines; after Close, none at all.
//
// Stats. Pool.Stats returns a consistent snapshot of counters and gauges, with an exact
// accounting identity (every submit ends in exactly one outcome). Counters are updated inside
// critical sections the pool takes anyway. Stats also holds the distributions of the tasks'
// wait, run and end-to-end times, as latency.Histogram values from which p50, p95 and p99 are
// read: of a sample of about one task in 64 by default, whose clock readings are all the cost,
// and of every task with WithTimings, which costs two clock reads per task:
//
//	p := pool.New(8, 1024, pool.WithTimings())
//	...
//	s := p.Stats()
//	p99 := s.EndToEnd.Quantile(0.99)
//
// Hooks. WithHooks sets Hooks.OnDrop and Hooks.OnError; each gets the context the task was
// submitted with and an event (DropEvent, ErrorEvent) that implements slog.LogValuer.
// WithLogger logs the same events to a *slog.Logger with one option (as in scope, retry and
// queue), and WithName names the pool in those records and in a pprof label (pool=name) that
// its workers carry while they run tasks.
//
// Misuse panics, in the caller's goroutine, with a "pool:" message: New with fewer than one
// worker or a negative queue, an unknown Overflow, a negative idle timeout, a nil Option, a
// nil func or context, and the methods of a zero Pool, Group or Handle ("pool: zero Pool:
// use pool.New").
//
// Everything in this package is safe for concurrent use.
package pool

// Where things are: pool.go holds Pool, New and Submit's placement of a task; worker.go the
// worker goroutines and a task's walk through them (run, settle, count, fetch the next task,
// park, exit); queue.go the queue of tasks (an internal/ring Ring); overflow.go what a full
// pool does (options.go holds the Overflow policies), blocked.go the submitters blocked under
// Block; taskctx.go the contexts tasks run with; inline.go tasks run in a caller's goroutine;
// close.go Close; observe.go the pool's name, logger and pprof labels; group.go, handle.go,
// stats.go, options.go and errors.go what their names say.
