package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
)

const ms = time.Millisecond

var (
	errA = errors.New("a")
	errB = errors.New("b")
	errC = errors.New("c")
	errD = errors.New("d")
)

// recorder is an operation that fails with errs in turn (nil: success) and records the
// virtual time at which each attempt started, relative to the start of the bubble.
type recorder struct {
	start time.Time
	errs  []error
	at    []time.Duration
}

func newRecorder(errs ...error) *recorder { return &recorder{start: time.Now(), errs: errs} }

func (r *recorder) op(ctx context.Context) error {
	r.at = append(r.at, time.Since(r.start))
	i := len(r.at) - 1
	if i >= len(r.errs) {
		return r.errs[len(r.errs)-1]
	}
	return r.errs[i]
}

func asError(t *testing.T, err error) *retry.Error {
	t.Helper()
	var e *retry.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *retry.Error", err, err)
	}
	return e
}

func noJitter(d time.Duration) retry.Option { return retry.WithBackoff(backoff.Constant(d)) }

// onRetry and onGiveUp set one hook, for tests that need only that one.
func onRetry(f func(retry.RetryEvent)) retry.Option {
	return retry.WithHooks(retry.Hooks{OnRetry: func(_ context.Context, e retry.RetryEvent) { f(e) }})
}

func onGiveUp(f func(*retry.Error)) retry.Option {
	return retry.WithHooks(retry.Hooks{OnGiveUp: func(_ context.Context, e *retry.Error) { f(e) }})
}

func TestFirstAttemptSucceeds(t *testing.T) {
	calls, hooks := 0, 0
	p := retry.New(retry.WithHooks(retry.Hooks{
		OnRetry:  func(context.Context, retry.RetryEvent) { hooks++ },
		OnGiveUp: func(context.Context, *retry.Error) { hooks++ },
	}))
	err := retry.Do(context.Background(), p, func(context.Context) error { calls++; return nil })
	equal(t, nil, err)
	equal(t, 1, calls)
	equal(t, 0, hooks)
	var zero retry.Policy
	equal(t, nil, retry.Do(context.Background(), &zero, func(context.Context) error { return nil }), "zero Policy")
}

func TestExponentialDelaysAreExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(errA, errB, errC, errD)
		type call struct {
			attempt int
			err     error
			delay   time.Duration
		}
		var retries []call
		var outcomes []*retry.Error
		p := retry.New(
			retry.WithMaxAttempts(4),
			retry.WithBackoff(backoff.Exponential(100*ms, 2, time.Second)),
			retry.WithHooks(retry.Hooks{
				OnRetry: func(_ context.Context, e retry.RetryEvent) {
					retries = append(retries, call{e.Attempt, e.Err, e.Delay})
				},
				OnGiveUp: func(_ context.Context, e *retry.Error) { outcomes = append(outcomes, e) },
			}),
		)
		err := retry.Do(t.Context(), p, r.op)
		equal(t, []time.Duration{0, 100 * ms, 300 * ms, 700 * ms}, r.at, "attempt start times")
		equal(t, 700*ms, time.Since(r.start), "returned right after the last attempt")
		// OnRetry runs before each sleep, never after the final attempt (retry-go#31).
		equal(t, []call{{1, errA, 100 * ms}, {2, errB, 200 * ms}, {3, errC, 400 * ms}}, retries)

		e := asError(t, err)
		equal(t, 4, e.Attempts)
		equal(t, retry.ErrMaxAttempts, e.Reason)
		equal(t, []error{errA, errB, errC, errD}, e.Errors())
		equal(t, errD, e.Last())
		equal(t, nil, e.Cause)
		for _, target := range []error{errA, errB, errC, errD, retry.ErrExhausted, retry.ErrMaxAttempts} {
			check(t, errors.Is(err, target), "errors.Is(err, %v) = false", target)
		}
		for _, target := range []error{retry.ErrPermanent, retry.ErrCanceled, retry.ErrMaxElapsed, retry.ErrBudgetExhausted, context.Canceled} {
			check(t, !errors.Is(err, target), "errors.Is(err, %v) = true", target)
		}
		equal(t, "retry: max attempts reached after 4 attempts: d", err.Error())
		equal(t, []*retry.Error{e}, outcomes, "OnGiveUp called exactly once with the outcome")
	})
}

func TestSeededJitterDelaysAreExact(t *testing.T) {
	for _, j := range []backoff.Jitter{backoff.FullJitter, backoff.EqualJitter, backoff.DecorrelatedJitter} {
		t.Run(j.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bo := backoff.Exponential(100*ms, 2, time.Second, backoff.WithJitter(j), backoff.WithSeed(99))
				var want []time.Duration
				var sum time.Duration
				for _, d := range append([]time.Duration{0}, bo.Delays(5)...) {
					sum += d
					want = append(want, sum)
				}
				r := newRecorder(errA)
				err := retry.Do(t.Context(), retry.New(retry.WithMaxAttempts(6), retry.WithBackoff(bo)), r.op)
				equal(t, want, r.at)
				equal(t, 6, asError(t, err).Attempts)
			})
		})
	}
}

func TestRetryThenSucceed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(errA, errB, nil)
		gaveUp := 0
		err := retry.Do(t.Context(), retry.New(noJitter(50*ms), onGiveUp(func(*retry.Error) { gaveUp++ })), r.op)
		equal(t, nil, err)
		equal(t, []time.Duration{0, 50 * ms, 100 * ms}, r.at)
		equal(t, 0, gaveUp)
	})
}

func TestDefaultsMakeThreeAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(errA)
		e := asError(t, retry.Do(t.Context(), nil, r.op))
		equal(t, 3, e.Attempts)
		// The default backoff is full jitter over 100ms, 200ms: at most 300ms in total.
		check(t, time.Since(r.start) <= 300*ms, "default schedule took %v", time.Since(r.start))
	})
}

func TestAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at, deadlines []time.Duration
		var causes []error
		op := func(ctx context.Context) error {
			at = append(at, time.Since(start))
			dl, ok := ctx.Deadline()
			check(t, ok, "attempt context has no deadline")
			deadlines = append(deadlines, dl.Sub(start))
			<-ctx.Done()
			causes = append(causes, context.Cause(ctx))
			return ctx.Err()
		}
		err := retry.Do(t.Context(), retry.New(retry.WithMaxAttempts(3), retry.WithAttemptTimeout(time.Second), noJitter(500*ms)), op)
		equal(t, []time.Duration{0, 1500 * ms, 3000 * ms}, at)
		equal(t, []time.Duration{1000 * ms, 2500 * ms, 4000 * ms}, deadlines)
		equal(t, []error{retry.ErrAttemptTimeout, retry.ErrAttemptTimeout, retry.ErrAttemptTimeout}, causes)
		equal(t, 4*time.Second, time.Since(start))
		e := asError(t, err)
		equal(t, retry.ErrMaxAttempts, e.Reason, "attempt timeouts are retried")
		check(t, errors.Is(err, context.DeadlineExceeded), "attempt errors kept")
	})
}

// MaxElapsed bounds DoValue and a loop with AttemptTimeout the same way: from the start of
// the call.
func TestMaxElapsedWithDoValueAndAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		p := retry.New(retry.WithMaxAttempts(100), retry.WithMaxElapsed(1950*ms),
			retry.WithAttemptTimeout(400*ms), noJitter(100*ms))
		v, err := retry.DoValue(t.Context(), p, func(ctx context.Context) (int, error) {
			at = append(at, time.Since(start))
			<-ctx.Done()
			return len(at), ctx.Err()
		})
		equal(t, 0, v)
		equal(t, []time.Duration{0, 500 * ms, 1000 * ms, 1500 * ms}, at)
		// The fourth attempt times out at 1.9s; a fifth would start at 2s, past the limit.
		equal(t, 1900*ms, time.Since(start), "gave up without sleeping")
		e := asError(t, err)
		equal(t, retry.ErrMaxElapsed, e.Reason)
		equal(t, 4, e.Attempts)
	})
}

func TestAttemptTimeoutSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, err := retry.DoValue(t.Context(), retry.New(retry.WithAttemptTimeout(time.Second)),
			func(ctx context.Context) (int, error) {
				_, ok := ctx.Deadline()
				check(t, ok, "no deadline")
				return 7, nil
			})
		equal(t, 7, v)
		equal(t, nil, err)
	})
}

func TestMaxElapsed(t *testing.T) {
	cases := []struct {
		name     string
		first    time.Duration // how long the first attempt runs
		limit    time.Duration
		wantAt   []time.Duration
		wantDone time.Duration
	}{
		{"limit between attempts", 0, time.Second, []time.Duration{0, 300 * ms, 600 * ms, 900 * ms}, 900 * ms},
		{"attempt exactly at the limit", 0, 900 * ms, []time.Duration{0, 300 * ms, 600 * ms, 900 * ms}, 900 * ms},
		{"just below", 0, 899 * ms, []time.Duration{0, 300 * ms, 600 * ms}, 600 * ms},
		// Measured from the start of the call, as every peer does: the first attempt's
		// time counts. (It used to be measured from the end of the first failed attempt,
		// which gave [0, 500ms, 800ms, 1.1s] here and [0, 5.3s, 5.6s, 5.9s] below.)
		{"the first attempt's time counts", 200 * ms, time.Second, []time.Duration{0, 500 * ms, 800 * ms}, 800 * ms},
		{"a first attempt longer than the limit ends the call", 5 * time.Second, time.Second,
			[]time.Duration{0}, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var at []time.Duration
				op := func(ctx context.Context) error {
					at = append(at, time.Since(start))
					if len(at) == 1 {
						time.Sleep(c.first)
					}
					return errA
				}
				err := retry.Do(t.Context(), retry.New(retry.WithMaxAttempts(100), retry.WithMaxElapsed(c.limit), noJitter(300*ms)), op)
				equal(t, c.wantAt, at)
				equal(t, c.wantDone, time.Since(start), "gave up without sleeping")
				e := asError(t, err)
				equal(t, retry.ErrMaxElapsed, e.Reason)
				equal(t, len(c.wantAt), e.Attempts)
				equal(t, nil, e.Cause)
				check(t, errors.Is(err, retry.ErrExhausted) && errors.Is(err, errA), "%v", err)
			})
		})
	}
}

// Regression for go-retryablehttp#272: a retry loop must not sleep into the caller's
// deadline only to fail there; it gives up at once with the last error.
func TestContextDeadlineCutsOffWithoutSleeping(t *testing.T) {
	for _, c := range []struct {
		timeout  time.Duration
		wantAt   []time.Duration
		wantDone time.Duration
	}{
		{time.Second, []time.Duration{0, 400 * ms, 800 * ms}, 800 * ms},
		{800 * ms, []time.Duration{0, 400 * ms}, 400 * ms}, // an attempt at the deadline is pointless
		{801 * ms, []time.Duration{0, 400 * ms, 800 * ms}, 800 * ms},
	} {
		t.Run(c.timeout.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), c.timeout)
				defer cancel()
				r := newRecorder(errA, errB, errC)
				err := retry.Do(ctx, retry.New(retry.WithMaxAttempts(10), noJitter(400*ms)), r.op)
				equal(t, c.wantAt, r.at)
				equal(t, c.wantDone, time.Since(r.start), "gave up at once instead of sleeping into the deadline")
				equal(t, nil, ctx.Err(), "the deadline has not passed yet")
				e := asError(t, err)
				equal(t, retry.ErrMaxElapsed, e.Reason)
				equal(t, context.DeadlineExceeded, e.Cause)
				check(t, errors.Is(err, context.DeadlineExceeded), "deadline cause missing")
				check(t, errors.Is(err, e.Last()) && e.Last() != nil, "last error lost")
			})
		})
	}
}

// Regression for cenkalti/backoff#82 and v5's behaviour: on cancellation the last operation
// error is kept beside the context's cause, not replaced by it.
func TestCancelDuringSleepKeepsLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := errors.New("shutting down")
		ctx, cancel := context.WithCancelCause(t.Context())
		r := newRecorder(errA, errB)
		time.AfterFunc(1250*ms, func() { cancel(cause) })
		gaveUp := 0
		err := retry.Do(ctx, retry.New(retry.WithMaxAttempts(10), noJitter(time.Second),
			onGiveUp(func(*retry.Error) { gaveUp++ })), r.op)

		equal(t, 1250*ms, time.Since(r.start), "returned as soon as ctx was canceled")
		equal(t, []time.Duration{0, time.Second}, r.at)
		e := asError(t, err)
		equal(t, retry.ErrCanceled, e.Reason)
		equal(t, cause, e.Cause)
		equal(t, errB, e.Last())
		equal(t, []error{errA, errB, cause}, e.Unwrap())
		check(t, errors.Is(err, cause) && errors.Is(err, errB) && errors.Is(err, retry.ErrCanceled), "%v", err)
		equal(t, "retry: canceled after 2 attempts: shutting down; last error: b", err.Error())
		equal(t, 1, gaveUp)
	})
}

// Regression for cenkalti/backoff#68: an already-done context runs no attempt at all.
func TestCanceledBeforeFirstAttempt(t *testing.T) {
	for _, timeout := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		calls := 0
		opts := []retry.Option{}
		if timeout {
			opts = append(opts, retry.WithAttemptTimeout(time.Second))
		}
		err := retry.Do(ctx, retry.New(opts...), func(context.Context) error { calls++; return nil })
		equal(t, 0, calls, "never starts an attempt with a done context")
		e := asError(t, err)
		equal(t, 0, e.Attempts)
		equal(t, retry.ErrCanceled, e.Reason)
		equal(t, nil, e.Last())
		check(t, errors.Is(err, context.Canceled), "%v", err)
		equal(t, "retry: canceled before the first attempt: context canceled", err.Error())
	}
}

// The rule "context cancellation and deadline are never retried" is about the caller's
// context: once it is done, the call stops, whatever the operation returned.
func TestCallerContextErrorsAreNeverRetried(t *testing.T) {
	t.Run("caller canceled during the attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := retry.Do(ctx, retry.New(retry.WithRetryIf(func(error) bool { return true }), noJitter(0)), func(ctx context.Context) error {
			calls++
			cancel()
			return ctx.Err()
		})

		equal(t, 1, calls)
		equal(t, retry.ErrCanceled, asError(t, err).Reason)
	})
	t.Run("caller's deadline passed during the attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			calls := 0
			err := retry.Do(ctx, retry.New(retry.WithRetryIf(func(error) bool { return true }), noJitter(0)), func(ctx context.Context) error {
				calls++
				<-ctx.Done()
				return errors.Join(errA, ctx.Err())
			})

			equal(t, 1, calls)
			e := asError(t, err)
			equal(t, retry.ErrCanceled, e.Reason)
			equal(t, context.DeadlineExceeded, e.Cause)
		})
	})
}

// A context error that the operation made itself, while the caller's context is live (an
// http.Client.Timeout, a dial timeout, a per-call deadline), is an ordinary transient error:
// it is retried, and only the If predicate can reject it. (It used to end the call with
// ErrPermanent, and no predicate could override that.)
func TestOperationsOwnContextErrorsAreRetried(t *testing.T) {
	for _, cerr := range []error{
		context.Canceled,
		context.DeadlineExceeded,
		fmt.Errorf("dial: %w", context.DeadlineExceeded),
		errors.Join(errA, context.Canceled),
	} {
		t.Run(cerr.Error(), func(t *testing.T) {
			calls := 0
			op := func(context.Context) error { calls++; return cerr }
			err := retry.Do(context.Background(), retry.New(noJitter(0)), op)
			equal(t, 3, calls, "retried like any error")
			e := asError(t, err)
			equal(t, retry.ErrMaxAttempts, e.Reason)
			equal(t, nil, e.Cause, "the caller's context did not end")
			check(t, errors.Is(err, cerr), "attempt error kept: %v", err)

			calls = 0
			err = retry.Do(context.Background(), retry.New(noJitter(0),
				retry.WithRetryIf(func(err error) bool {
					return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
				})), op)

			equal(t, 1, calls, "the predicate can still reject it")
			equal(t, retry.ErrPermanent, asError(t, err).Reason)
		})
	}
}

// A per-call deadline inside the operation: the first call runs into its own 200ms timeout,
// the retry 50ms later succeeds. Exact virtual times.
func TestOperationTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		var retried []error
		err := retry.Do(t.Context(), retry.New(noJitter(50*ms), onRetry(func(e retry.RetryEvent) { retried = append(retried, e.Err) })), func(ctx context.Context) error {
			at = append(at, time.Since(start))
			ctx, cancel := context.WithTimeout(ctx, 200*ms)
			defer cancel()
			if len(at) == 1 {
				<-ctx.Done()
				return fmt.Errorf("query: %w", ctx.Err())
			}
			return nil
		})

		equal(t, nil, err)
		equal(t, []time.Duration{0, 250 * ms}, at)
		equal(t, 1, len(retried))
		check(t, errors.Is(retried[0], context.DeadlineExceeded), "first error %v", retried[0])
	})
}

// The reviewer's reproducer: an http.Client with a Timeout against a server whose first
// response is slow. The client's timeout error matches context.DeadlineExceeded while the
// caller's context is live; the call must retry and succeed. Real loopback network, so the
// test asserts outcomes, not times.
func TestHTTPClientTimeoutIsRetried(t *testing.T) {
	var hits atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			select { // the first request hangs until the client gives up on it
			case <-r.Context().Done():
			case <-release:
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	defer close(release)
	client := &http.Client{Timeout: 200 * ms, Transport: srv.Client().Transport}
	var retried []error
	err := retry.Do(context.Background(), retry.New(retry.WithMaxAttempts(5), noJitter(0), onRetry(func(e retry.RetryEvent) { retried = append(retried, e.Err) })), func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return retry.Permanent(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	})

	equal(t, nil, err)
	check(t, len(retried) >= 1 && errors.Is(retried[0], context.DeadlineExceeded),
		"first attempt should have failed with the client's timeout: %v", retried)
	check(t, hits.Load() >= 2, "server saw %d requests", hits.Load())
}

func TestPermanentStopsAndCannotBeOverridden(t *testing.T) {
	inner := errors.New("bad request")
	for name, perm := range map[string]error{
		"direct":  retry.Permanent(inner),
		"wrapped": fmt.Errorf("call: %w", retry.Permanent(inner)),
		"joined":  errors.Join(errA, retry.Permanent(inner)),
		"hinted":  retry.After(retry.Permanent(inner), time.Second),
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			predicateCalls := 0
			err := retry.Do(context.Background(), retry.New(

				retry.WithMaxAttempts(10), noJitter(0),
				retry.WithRetryIf(func(error) bool { predicateCalls++; return true })), func(context.Context) error {
				calls++
				if calls == 1 {
					return errA
				}
				return perm
			})

			// retry-go#110
			equal(t, 2, calls)
			equal(t, 1, predicateCalls, "predicate not consulted for a Permanent error")
			e := asError(t, err)
			equal(t, retry.ErrPermanent, e.Reason)
			check(t, errors.Is(err, inner), "inner error not found")
			check(t, retry.IsPermanent(perm), "IsPermanent(%v)", perm)
		})
	}
	equal(t, nil, retry.Permanent(nil))
	check(t, !retry.IsPermanent(errA), "plain error is permanent")
	check(t, !retry.IsPermanent(nil), "nil is permanent")
}

// A nested call's Permanent mark belongs to the inner loop (cenkalti/backoff#174): the outer
// loop classifies the inner *Error by its own rules.
func TestPermanentDoesNotLeakOutOfANestedCall(t *testing.T) {
	inner := retry.New(retry.WithMaxAttempts(2), noJitter(0))
	outerCalls, innerCalls := 0, 0
	err := retry.Do(context.Background(), retry.New(retry.WithMaxAttempts(3), noJitter(0)), func(ctx context.Context) error {
		outerCalls++
		return retry.Do(ctx, inner, func(context.Context) error { innerCalls++; return retry.Permanent(errA) })
	})

	equal(t, 3, outerCalls)
	equal(t, 3, innerCalls)
	e := asError(t, err)
	equal(t, retry.ErrMaxAttempts, e.Reason)
	check(t, errors.Is(e.Last(), retry.ErrPermanent), "inner outcome keeps its own reason")
	check(t, !retry.IsPermanent(e), "outer outcome is not marked")
}

func TestPredicate(t *testing.T) {
	retryable := func(err error) bool { return errors.Is(err, errA) }
	r := newRecorder(errA, errA, errB)
	err := retry.Do(context.Background(), retry.New(retry.WithRetryIf(retryable), retry.WithMaxAttempts(10), noJitter(0)), r.op)
	equal(t, 3, len(r.at))
	e := asError(t, err)
	equal(t, retry.ErrPermanent, e.Reason)
	equal(t, []error{errA, errA, errB}, e.Errors())
	equal(t, "retry: permanent error after 3 attempts: b", err.Error())
}

func TestRetryAfterHint(t *testing.T) {
	t.Run("replaces the backoff delay", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRecorder(retry.After(errA, 3*time.Second), errB, errC)
			var delays []time.Duration
			err := retry.Do(t.Context(), retry.New(noJitter(100*ms),
				onRetry(func(e retry.RetryEvent) { delays = append(delays, e.Delay) })), r.op)

			equal(t, []time.Duration{0, 3 * time.Second, 3100 * ms}, r.at)
			equal(t, []time.Duration{3 * time.Second, 100 * ms}, delays)
			check(t, errors.Is(err, errA), "hinted error kept")
		})
	})
	t.Run("clamped to MaxHint", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRecorder(retry.After(errA, 484289*time.Hour), errB) // go-retryablehttp#247
			_ = retry.Do(t.Context(), retry.New(noJitter(100*ms), retry.WithMaxAttempts(2), retry.WithMaxHint(2*time.Second)), r.op)
			equal(t, []time.Duration{0, 2 * time.Second}, r.at)
		})
	})
	t.Run("default clamp is one minute", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRecorder(retry.After(errA, time.Hour), errB)
			_ = retry.Do(t.Context(), retry.New(noJitter(100*ms), retry.WithMaxAttempts(2)), r.op)
			equal(t, []time.Duration{0, time.Minute}, r.at)
		})
	})
	t.Run("jitter only adds", func(t *testing.T) {
		for seed := range uint64(50) {
			synctest.Test(t, func(t *testing.T) {
				bo := backoff.Constant(100*ms, backoff.WithJitter(backoff.FullJitter), backoff.WithSeed(seed))
				want := bo.Spread(3*time.Second, 0)
				check(t, want >= 3*time.Second && want <= 3300*ms, "spread %v", want)
				r := newRecorder(retry.After(errA, 3*time.Second), errB)
				_ = retry.Do(t.Context(), retry.New(retry.WithBackoff(bo), retry.WithMaxAttempts(2)), r.op)
				equal(t, []time.Duration{0, want}, r.at)
			})
		}
	})
	t.Run("from an HTTP Retry-After date", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			now := time.Now()
			header := now.Add(7 * time.Second).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT")
			r := newRecorder(errA, errB)
			op := func(ctx context.Context) error {
				err := r.op(ctx)
				if len(r.at) == 1 {
					d, ok := retry.ParseRetryAfter(header, time.Now())
					check(t, ok, "parse %q", header)
					return retry.After(err, d)
				}
				return err
			}
			_ = retry.Do(t.Context(), retry.New(noJitter(100*ms), retry.WithMaxAttempts(2)), op)
			equal(t, []time.Duration{0, 7 * time.Second}, r.at)
		})
	})
	t.Run("a hint past the context deadline gives up now", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			r := newRecorder(retry.After(errA, 10*time.Second))
			err := retry.Do(ctx, retry.New(noJitter(100*ms)), r.op)
			equal(t, time.Duration(0), time.Since(r.start))
			equal(t, retry.ErrMaxElapsed, asError(t, err).Reason)
		})
	})
}

func TestHintAccessors(t *testing.T) {
	d, ok := retry.Hint(fmt.Errorf("x: %w", retry.After(errA, 2*time.Second)))
	equal(t, 2*time.Second, d)
	check(t, ok, "no hint")
	_, ok = retry.Hint(errA)
	check(t, !ok, "hint on a plain error")
	d, ok = retry.Hint(retry.After(errA, -time.Second))
	equal(t, time.Duration(0), d)
	check(t, ok, "negative hint dropped")
	equal(t, nil, retry.After(nil, time.Second))
	equal(t, "a", retry.After(errA, time.Second).Error())
	equal(t, "a", retry.Permanent(errA).Error())
	d, ok = retry.Hint(errors.Join(errB, retry.After(errA, time.Second)))
	check(t, ok && d == time.Second, "hint in a joined error: %v %v", d, ok)
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * time.Second, true},
		{" 0 ", 0, true},
		{"007", 7 * time.Second, true},
		{"99999999999999999999999999", 1<<63 - 1, true},
		{"9223372037", 1<<63 - 1, true},
		{"9223372036", 9223372036 * time.Second, true},
		{"Wed, 21 Oct 2026 07:28:30 GMT", 30 * time.Second, true},
		{"Wednesday, 21-Oct-26 07:29:00 GMT", time.Minute, true},
		{"Wed Oct 21 07:28:05 2026", 5 * time.Second, true},
		{"Wed, 21 Oct 2026 07:00:00 GMT", 0, true}, // in the past
		{"", 0, false},
		{"   ", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"12s", 0, false},
		{"soon", 0, false},
		{"Wed, 21 Oct 2026 07:28:30 PST", 0, false},
	} {
		got, ok := retry.ParseRetryAfter(c.in, now)
		equal(t, c.want, got, "%q", c.in)
		equal(t, c.ok, ok, "%q ok", c.in)
	}
}

func TestDoValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		p := retry.New(noJitter(10 * ms))
		v, err := retry.DoValue(t.Context(), p, func(context.Context) (string, error) {
			calls++
			if calls < 3 {
				return "partial", errA
			}
			return "ok", nil
		})
		equal(t, "ok", v)
		equal(t, nil, err)
		equal(t, 3, calls)

		v, err = retry.DoValue(t.Context(), p, func(context.Context) (string, error) { return "partial", errA })
		equal(t, "", v, "zero value on failure")
		equal(t, 3, asError(t, err).Attempts)

		n, err := retry.DoValue(t.Context(), nil, func(context.Context) (int, error) { return 42, nil })
		equal(t, 42, n)
		equal(t, nil, err)
	})
}

func TestNextForCallersThatDoNotLoop(t *testing.T) {
	p := retry.New(retry.WithMaxAttempts(4), retry.WithBackoff(backoff.Exponential(time.Second, 2, time.Minute)),
		retry.WithRetryIf(func(err error) bool { return !errors.Is(err, errB) }), retry.WithMaxHint(10*time.Second))
	type out struct {
		d      time.Duration
		reason error
	}
	next := func(n int, err error) out {
		d, r := p.Next(n, 0, err)
		return out{d, r}
	}
	equal(t, out{time.Second, nil}, next(1, errA))
	equal(t, out{2 * time.Second, nil}, next(2, errA))
	equal(t, out{4 * time.Second, nil}, next(3, errA))
	equal(t, out{0, retry.ErrMaxAttempts}, next(4, errA))
	equal(t, out{0, retry.ErrPermanent}, next(1, errB), "predicate")
	equal(t, out{0, retry.ErrPermanent}, next(1, retry.Permanent(errA)))
	// Next has no caller context to consult: a context error is an ordinary error to it.
	equal(t, out{time.Second, nil}, next(1, context.Canceled))
	equal(t, out{2 * time.Second, nil}, next(2, fmt.Errorf("dial: %w", context.DeadlineExceeded)))
	equal(t, out{5 * time.Second, nil}, next(1, retry.After(errA, 5*time.Second)))
	equal(t, out{10 * time.Second, nil}, next(2, retry.After(errA, time.Hour)))
	equal(t, out{time.Second, nil}, next(0, errA), "attempts below 1 count as 1")
	panicsWith(t, "retry: Next with a nil error", func() { p.Next(1, 0, nil) })
}

func TestOnGiveUpExactlyOncePerReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		empty := retry.NewBudget(0, 0)
		canceled, cancel := context.WithCancel(t.Context())
		cancel()
		cases := []struct {
			ctx    context.Context
			opts   []retry.Option
			op     func(context.Context) error
			reason error
		}{
			{t.Context(), []retry.Option{retry.WithMaxAttempts(2)}, func(context.Context) error { return errA }, retry.ErrMaxAttempts},
			{t.Context(), nil, func(context.Context) error { return retry.Permanent(errA) }, retry.ErrPermanent},
			{t.Context(), []retry.Option{retry.WithBudget(empty)}, func(context.Context) error { return errA }, retry.ErrBudgetExhausted},
			{t.Context(), []retry.Option{retry.WithMaxElapsed(time.Millisecond), noJitter(time.Second)}, func(context.Context) error { return errA }, retry.ErrMaxElapsed},
			{canceled, nil, func(context.Context) error { return errA }, retry.ErrCanceled},
		}
		for _, c := range cases {
			var got []*retry.Error
			opts := append([]retry.Option{noJitter(0)}, append(c.opts, onGiveUp(func(e *retry.Error) { got = append(got, e) }))...)
			err := retry.Do(c.ctx, retry.New(opts...), c.op)
			equal(t, 1, len(got), "%v: OnGiveUp calls", c.reason)
			equal(t, error(got[0]), err)
			equal(t, c.reason, got[0].Reason)
			check(t, errors.Is(err, retry.ErrExhausted) && errors.Is(err, c.reason), "%v", err)
		}
	})
}

func TestOptionPanics(t *testing.T) {
	panicsWith(t, "retry: WithMaxAttempts(0): need at least 1", func() { retry.WithMaxAttempts(0) })
	panicsWith(t, "retry: WithMaxAttempts(-3): need at least 1", func() { retry.WithMaxAttempts(-3) })
	panicsWith(t, "retry: WithMaxElapsed(-1s): negative duration", func() { retry.WithMaxElapsed(-time.Second) })
	panicsWith(t, "retry: WithAttemptTimeout(-1s): negative duration", func() { retry.WithAttemptTimeout(-time.Second) })
	panicsWith(t, "retry: WithMaxHint(-1s): negative duration", func() { retry.WithMaxHint(-time.Second) })
	// MaxHint(0) used to mean one minute, silently; its doc said a longer hint is cut to 0.
	panicsWith(t, "retry: WithMaxHint(0s): zero cap (leave WithMaxHint out for the default of one minute)", func() { retry.WithMaxHint(0) })
	panicsWith(t, "retry: WithRetryIf(nil): nil predicate", func() { retry.WithRetryIf(nil) })
}

// Nil arguments are programmer errors: each panics with a "retry:" message that names it,
// not with a bare nil dereference from inside the loop (as they did before).
func TestNilArgumentsPanicClearly(t *testing.T) {
	var nilCtx context.Context
	ctx := context.Background()
	op := func(context.Context) error { return nil }
	vop := func(context.Context) (int, error) { return 1, nil }
	p := retry.New()
	var np *retry.Policy
	panicsWith(t, "retry: nil option", func() { retry.New(nil) })
	panicsWith(t, "retry: nil option", func() { retry.New(retry.WithMaxAttempts(2), nil) })
	panicsWith(t, "retry: nil option", func() { _ = retry.Do(ctx, retry.New(nil), op) })
	panicsWith(t, "retry: nil context", func() { _ = retry.Do(nilCtx, nil, op) })
	panicsWith(t, "retry: nil context", func() { _ = retry.Do(nilCtx, p, op) })
	panicsWith(t, "retry: nil context", func() { _ = retry.Do(nilCtx, np, op) })
	panicsWith(t, "retry: nil context", func() { _, _ = retry.DoValue(nilCtx, p, vop) })
	panicsWith(t, "retry: nil operation", func() { _ = retry.Do(ctx, nil, nil) })
	panicsWith(t, "retry: nil operation", func() { _ = retry.Do(ctx, p, nil) })
	panicsWith(t, "retry: nil operation", func() { _, _ = retry.DoValue[int](ctx, nil, nil) })
	panicsWith(t, "retry: nil operation", func() {
		_ = retry.Do(ctx, retry.New(retry.WithAttemptTimeout(time.Second)), nil)
	})
}

// A nil *Policy is the zero Policy for Do, DoValue and Next alike.
func TestNilPolicyIsTheZeroPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var np *retry.Policy
		var zero retry.Policy
		equal(t, nil, retry.Do(t.Context(), np, func(context.Context) error { return nil }))
		calls := 0
		e := asError(t, retry.Do(t.Context(), np, func(context.Context) error { calls++; return errA }))
		equal(t, 3, calls, "default max attempts")
		equal(t, retry.ErrMaxAttempts, e.Reason)
		calls = 0
		_, err := retry.DoValue(t.Context(), np, func(context.Context) (int, error) { calls++; return 0, errA })
		equal(t, 3, calls)
		equal(t, 3, asError(t, err).Attempts)
		for n := 1; n <= 3; n++ {
			d, reason := np.Next(n, 0, errA)
			zd, zreason := zero.Next(n, 0, errA)
			equal(t, zreason, reason, "Next(%d) reason", n)
			check(t, d >= 0 && zd >= 0 && d <= 10*time.Second, "Next(%d) delay %v", n, d)
		}
		_, reason := np.Next(3, 0, errA)
		equal(t, retry.ErrMaxAttempts, reason)
	})
}

func TestErrorFormatting(t *testing.T) {
	e := asError(t, retry.Do(context.Background(), retry.New(retry.WithMaxAttempts(1)), func(context.Context) error { return errA }))
	equal(t, "retry: max attempts reached after 1 attempt: a", e.Error())
	equal(t, []error{errA}, e.Errors())
}

// The success path must not allocate, with or without a budget; two failures with zero
// delay allocate at most twice (the *Error, here exactly once).
func TestAllocations(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	for name, p := range map[string]*retry.Policy{
		"defaults": retry.New(),
		"budget":   retry.New(retry.WithBudget(retry.NewBudget(0.1, 10))),
		"hooks": retry.New(retry.WithHooks(retry.Hooks{
			OnRetry:  func(context.Context, retry.RetryEvent) {},
			OnGiveUp: func(context.Context, *retry.Error) {},
		})),
		"elapsed": retry.New(retry.WithMaxElapsed(time.Minute)),
	} {
		equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = retry.Do(ctx, p, ok) }), "%s success", name)
	}
	for name, vp := range map[string]*retry.Policy{"defaults": retry.New(), "elapsed": retry.New(retry.WithMaxElapsed(time.Minute))} {
		equal(t, 0.0, testing.AllocsPerRun(1000, func() {
			_, _ = retry.DoValue(ctx, vp, func(context.Context) (int, error) { return 1, nil })
		}), "%s DoValue success", name)
	}

	fail := func(context.Context) error { return errA }
	two := retry.New(retry.WithMaxAttempts(2), noJitter(0))
	allocs := testing.AllocsPerRun(1000, func() { _ = retry.Do(ctx, two, fail) })
	check(t, allocs <= 2, "two failures: %v allocs", allocs)
	equal(t, 1.0, allocs, "two failures")

	var n int
	flaky := func(context.Context) error {
		if n++; n%3 != 0 {
			return errA
		}
		return nil
	}
	three := retry.New(retry.WithMaxAttempts(3), noJitter(0))
	equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = retry.Do(ctx, three, flaky) }), "two failures, then success")
	// The events handed to the hooks are values: reporting them allocates nothing either.
	var events int
	hooked := retry.New(retry.WithMaxAttempts(3), noJitter(0), retry.WithHooks(retry.Hooks{
		OnRetry: func(context.Context, retry.RetryEvent) { events++ },
	}))
	n = 0
	equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = retry.Do(ctx, hooked, flaky) }), "two failures with OnRetry, then success")
	equal(t, 2*1001, events, "OnRetry calls")
}

func TestManyAttemptsKeepEveryError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		var errs []error
		err := retry.Do(ctx, retry.New(retry.WithMaxAttempts(10), noJitter(time.Second)), func(context.Context) error {
			errs = append(errs, fmt.Errorf("attempt %d", len(errs)+1))
			if len(errs) == 6 {
				cancel()
			}
			return errs[len(errs)-1]
		})

		e := asError(t, err)
		equal(t, errs, e.Errors())
		equal(t, append(errs, context.Canceled), e.Unwrap())
		equal(t, "retry: canceled after 6 attempts: context canceled; last error: attempt 6", err.Error())
		equal(t, 5*time.Second, time.Since(start))
	})
}
