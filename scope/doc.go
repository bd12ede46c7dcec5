// Package scope runs concurrent tasks that cannot outlive their owner.
//
// Run calls a body with a *Scope; the body (and the tasks themselves) start tasks with Go, and
// Run returns only after every one of them has returned. The join cannot be forgotten, so no
// goroutine leaks past Run, and every failure reaches the caller:
//
//	err := scope.Run(ctx, func(s *scope.Scope) error {
//		for _, url := range urls {
//			s.Go(func(ctx context.Context) error { return fetch(ctx, url) })
//		}
//		return nil
//	}, scope.WithLimit(8))
//
// The guarantees:
//
//   - Join: Run never returns while a task runs. Starting a task after Run returned panics in
//     the goroutine that tried; a start that races Run's return either is joined or panics.
//   - Cancellation with a cause: tasks get a context that is cancelled when the scope is. By
//     default (FailFast) the first failure cancels it, and context.Cause tells every sibling
//     which task failed (a *TaskError wrapping its error). The parent's cancellation and
//     WithTimeout have their own causes.
//   - No starts after cancel: once the scope is cancelled, Go starts nothing; Skipped counts
//     the tasks that were not run.
//   - Backpressure: with WithLimit(n), at most n tasks run at once, on at most n reused
//     goroutines; Go waits for a slot, and the wait ends if the scope is cancelled. TryGo never
//     waits. A task that calls Go (or Spawn, or waits on a Handle) in its own full scope keeps
//     its slot while it waits, so if every running task does that, they wait until the scope
//     is cancelled: tasks that start tasks use TryGo, or leave room in the limit.
//   - Errors: Run returns nil or an error in which errors.Is and errors.As find every failure,
//     root cause first, and Errors lists each of them once. A task that merely returns its
//     scope's cancellation (ctx.Err()) is not a failure; when WithTimeout cut it off, the
//     timeout Run reports names it (a *TimeoutError lists the tasks it interrupted).
//   - Panics: a task panic is recovered with its stack, cancels the scope, and is re-raised in
//     the goroutine that called Run once every task has returned, as a *PanicError that carries
//     every other panic and failure. WithPanicsAsErrors returns it instead. A task that calls
//     runtime.Goexit (t.FailNow) has failed: ErrGoexit.
//   - Joiners: what a scope does when a task ends is decided by its Joiner: FailFast (the
//     default), Supervise (failures are collected, siblings keep running), FirstSuccess (the
//     first success completes the scope and cancels the rest), or your own; WithJoiner takes a
//     constructor, so that every scope has a Joiner value of its own.
//   - Typed results: Spawn returns a Handle to one task's value, whose Wait(ctx) a waiter may
//     give up; First returns the first success's value; Map and MapSeq map a slice or an
//     iter.Seq, bounded and in order, and a break out of a MapSeq loop cancels and joins every
//     call before the loop ends.
//   - Observability: GoNamed tasks carry a pprof label while they run, and WithStuckReport
//     reports the tasks still running when a cancelled scope takes longer than a grace period
//     to stop. WithLogger logs each failure as it happens, and the stuck report, to a
//     *slog.Logger (the same option as in pool, retry and queue).
//   - Misuse panics, in the caller's goroutine, with a "scope:" message: a negative limit or
//     grace, a nil option, body, task, context or constructor, a start after Run returned, and
//     the methods of a zero Scope or Handle ("scope: zero Scope: use scope.Run").
//
// The package keeps no package-level goroutines, channels or timers, so scopes work inside
// testing/synctest bubbles, with virtual time.
package scope

// Where things are: scope.go holds Scope, Run and the starting of tasks (Go, GoNamed, TryGo);
// outcome.go what a task's end does to its scope (the Joiner's decision, cancellation);
// end.go how Run ends (the join, the stuck report, Run's error or panic); limit.go the
// bounded scope's workers and their queue (an internal/ring Ring); joiner.go, join.go,
// result.go, options.go and errors.go the Joiners, the join count, typed results (Spawn,
// First, Map, MapSeq), options and errors; log.go WithLogger.
