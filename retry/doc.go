// Package retry calls an operation until it succeeds, within bounds that cannot multiply a
// failure into a retry storm, and says exactly why it gave up.
//
// A [Policy] is configured once and used by any number of goroutines:
//
//	p := retry.New(
//		retry.WithMaxAttempts(4),
//		retry.WithBackoff(backoff.Exponential(100*time.Millisecond, 2, 5*time.Second,
//			backoff.WithJitter(backoff.FullJitter))),
//		retry.WithBudget(budget), // shared: retries <= 10% of successes + 10/s
//	)
//	err := retry.Do(ctx, p, func(ctx context.Context) error { return call(ctx) })
//
// [Do] and [DoValue] take the same arguments in the same order, the context, the policy (nil
// for every default) and the operation; DoValue's operation also returns a value.
//
// # Bounds
//
// Every call is bounded by [WithMaxAttempts] (default 3), optionally [WithMaxElapsed] (time
// since the call started) and [WithAttemptTimeout] (each attempt's context carries the
// deadline), and always by the caller's context: an attempt never starts once the context is
// done, and a call never sleeps past the context's deadline: if the next attempt would start
// at or after it, the call gives up at once with the last error. A [Budget] shared across
// calls caps retries to a ratio of successes plus a minimum rate; it starts full, and an
// exhausted budget ends the call at once.
//
// # Classification
//
// Once the caller's context is canceled or past its deadline, nothing is retried: the call
// ends with [ErrCanceled] and the context's cause. Otherwise an error is retried unless it is
// marked with [Permanent] or the [WithRetryIf] predicate rejects it. The predicate is
// consulted last, so it can never retry a Permanent error. What the operation returns is not
// judged by whether it matches context.Canceled or context.DeadlineExceeded: while the
// caller's context is live such an error is the operation's own (a [WithAttemptTimeout], an
// http.Client timeout, a dial timeout) and is retried like any other. A server's hint
// ([After], [ParseRetryAfter] for HTTP Retry-After) replaces the backoff delay, is clamped
// to [WithMaxHint], and jitter only lengthens it.
//
// # Outcome
//
// A call returns nil or an [*Error]: it matches [ErrExhausted] and its reason
// ([ErrMaxAttempts], [ErrMaxElapsed], [ErrBudgetExhausted], [ErrPermanent], [ErrCanceled]),
// counts the attempts, and unwraps to every attempt's error and to the context's cause, so
// errors.Is finds any of them and the last operation error survives a cancellation. It
// matches no other reason: the outcome of a nested call among its attempts' errors is found,
// with everything it holds, but that outcome's reason is not matched through it.
//
// # Hooks
//
// [WithHooks] sets [Hooks]: OnRetry runs before each sleep with a [RetryEvent] (the attempt,
// its error, the delay chosen and how long the attempt ran), OnGiveUp exactly once when a call
// gives up, with its *Error. Both receive the call's context, so a Policy shared by many calls
// tells them apart. RetryEvent implements slog.LogValuer. [WithLogger] logs the same events
// to a *slog.Logger with one option (as in scope, pool and queue).
//
// A first attempt that succeeds allocates nothing. The loop uses the time package's clock and timers only, so tests drive
// it with testing/synctest.
//
// Invalid arguments are programmer errors and panic, in the caller's goroutine, with a
// message that names the setting ("retry: WithMaxAttempts(0): need at least 1"): a negative
// [WithMaxElapsed], [WithAttemptTimeout] or [WithMaxHint], a zero WithMaxHint,
// [WithMaxAttempts] below 1, a nil predicate, a nil Option, and a nil context or
// operation passed to [Do] or [DoValue]. A nil *Policy is not an error: it is the zero
// Policy, with every default.
//
// Callers that do not loop in-process (job queues redelivering later) use [Policy.Next],
// [IsPermanent], [Hint] and [Budget.Withdraw]/[Budget.Deposit] to apply the same rules.
package retry

// Where things are: retry.go holds Policy, its options, Do, DoValue and the retry loop;
// log.go WithLogger; errors.go Error, Permanent and how attempt errors are classified; hint.go parsing a
// server's Retry-After (ParseRetryAfter); budget.go the Budget, floor.go the arithmetic of its
// minimum rate.
