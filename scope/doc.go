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
//	}, scope.Limit(8))
//
// The guarantees:
//
//   - Join: Run never returns while a task runs. Starting a task after Run returned panics.
//   - Cancellation with a cause: tasks get a context that is cancelled when the scope is. By
//     default (FailFast) the first failure cancels it, and context.Cause tells every sibling
//     which task failed (a *TaskError wrapping its error). The parent's cancellation and the
//     Timeout option have their own causes.
//   - No starts after cancel: once the scope is cancelled, Go starts nothing; Skipped counts
//     the tasks that were not run.
//   - Backpressure: with Limit(n), at most n tasks run at once, on at most n reused goroutines;
//     Go waits for a slot, and the wait ends if the scope is cancelled. TryGo never waits.
//   - Errors: Run returns nil or an error in which errors.Is and errors.As find every failure,
//     root cause first. A task that merely returns its scope's cancellation (ctx.Err()) is not
//     a failure.
//   - Panics: a task panic is recovered with its stack, cancels the scope, and is re-raised in
//     the goroutine that called Run once every task has returned, as a *PanicError that carries
//     every other panic and failure. ReturnPanics returns it instead. A task that calls
//     runtime.Goexit (t.FailNow) has failed: ErrGoexit.
//   - Policies: what a scope does when a task ends is a Policy: FailFast (the default),
//     Supervise (failures are collected, siblings keep running), FirstSuccess (the first success
//     completes the scope and cancels the rest), or your own; WithPolicy takes a constructor, so
//     that every scope has a Policy value of its own.
//   - Typed results: Spawn returns a Handle to one task's value; First returns the first
//     success's value; Map and MapSeq map a slice or an iter.Seq, bounded and in order, and a
//     break out of a MapSeq loop cancels and joins every call before the loop ends.
//   - Observability: GoNamed tasks carry a pprof label while they run, and OnStuck reports the
//     tasks still running when a cancelled scope takes longer than a grace period to stop.
//
// The package keeps no package-level goroutines, channels or timers, so scopes work inside
// testing/synctest bubbles, with virtual time.
package scope
