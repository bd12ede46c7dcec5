// Package retry calls an operation until it succeeds, within bounds that cannot multiply a
// failure into a retry storm, and says exactly why it gave up.
//
// A [Policy] is configured once and used by any number of goroutines:
//
//	p := retry.New(
//		retry.MaxAttempts(4),
//		retry.Backoff(backoff.Exponential(100*time.Millisecond, 2, 5*time.Second,
//			backoff.WithJitter(backoff.FullJitter))),
//		retry.WithBudget(budget), // shared: retries <= 10% of successes + 10/s
//	)
//	err := p.Do(ctx, func(ctx context.Context) error { return call(ctx) })
//
// [Do] and [DoValue] are the one-off and value-returning forms.
//
// # Bounds
//
// Every call is bounded by [MaxAttempts] (default 3), optionally [MaxElapsed] (time since
// the call started) and [AttemptTimeout] (each attempt's context carries the deadline), and
// always by the caller's context: an attempt never starts once the context is done, and a
// call never sleeps past the context's deadline: if the next attempt would start at or after
// it, the call gives up at once with the last error. A [Budget] shared across calls caps retries to a
// ratio of successes plus a minimum rate; an empty budget ends the call at once.
//
// # Classification
//
// Once the caller's context is canceled or past its deadline, nothing is retried: the call
// ends with [ErrCanceled] and the context's cause. Otherwise an error is retried unless it is
// marked with [Permanent] or the [If] predicate rejects it. The predicate is consulted last,
// so it can never retry a Permanent error. What the operation returns is not judged by
// whether it matches context.Canceled or context.DeadlineExceeded: while the caller's
// context is live such an error is the operation's own (an [AttemptTimeout], an
// http.Client timeout, a dial timeout) and is retried like any other. A server's
// hint ([After], [ParseRetryAfter] for HTTP Retry-After) replaces the backoff delay, is
// clamped to [MaxHint], and jitter only lengthens it.
//
// # Outcome
//
// A call returns nil or an [*Error]: it matches [ErrExhausted] and its reason
// ([ErrMaxAttempts], [ErrMaxElapsed], [ErrBudgetExhausted], [ErrPermanent], [ErrCanceled]),
// counts the attempts, and unwraps to every attempt's error and to the context's cause, so
// errors.Is finds any of them and the last operation error survives a cancellation.
// [OnRetry] runs before each sleep; [OnGiveUp] runs exactly once when a call gives up.
//
// A first attempt that succeeds allocates nothing and costs about one context check more
// than a direct call. The loop uses the time package's clock and timers only, so tests drive
// it with testing/synctest.
//
// Invalid arguments are programmer errors and panic with a "retry:" message: a negative
// [MaxElapsed], [AttemptTimeout] or [MaxHint], a zero MaxHint, [MaxAttempts] below 1, a nil
// Option, and a nil context or operation passed to [Do], [Policy.Do] or [DoValue]. A nil
// *Policy is not an error: it is the zero Policy, with every default.
//
// Callers that do not loop in-process (job queues redelivering later) use [Policy.Next],
// [IsPermanent], [Hint] and [Budget.Withdraw]/[Budget.Deposit] to apply the same rules.
package retry
