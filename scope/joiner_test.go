package scope_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/scope"
)

func TestSuperviseKeepsSiblingsRunning(t *testing.T) {
	var finished atomic.Int32
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		failed := make(chan struct{})
		s.Go(func(ctx context.Context) error { defer close(failed); return errA })
		s.Go(func(ctx context.Context) error {
			<-failed
			if ctx.Err() != nil {
				return errors.New("cancelled by a sibling's failure")
			}
			finished.Add(1)
			return errB
		})
		return nil
	}, scope.WithJoiner(scope.Supervise))
	equal(t, int32(1), finished.Load())
	errs := unwrapAll(err)
	equal(t, 2, len(errs))
	errIs(t, err, errA)
	errIs(t, err, errB)
}

func TestFirstReturnsTheWinner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var loserCause error
		start := time.Now()
		v, err := scope.First(t.Context(), []func(context.Context) (string, error){
			func(ctx context.Context) (string, error) { return "", errA }, // fails at once
			func(ctx context.Context) (string, error) {
				select {
				case <-time.After(time.Hour):
					return "slow", nil
				case <-ctx.Done():
					loserCause = context.Cause(ctx)
					return "", ctx.Err()
				}
			},
			func(ctx context.Context) (string, error) { time.Sleep(2 * time.Second); return "fast", nil },
		})
		noErr(t, err, "a failure before the winner is not reported")
		equal(t, "fast", v)
		equal(t, 2*time.Second, time.Since(start))
		errMsg(t, loserCause, "scope: completed by task #2")
	})
}

func TestFirstReportsEveryFailureWhenNoneSucceeds(t *testing.T) {
	v, err := scope.First(t.Context(), []func(context.Context) (int, error){
		func(ctx context.Context) (int, error) { return 1, errA },
		func(ctx context.Context) (int, error) { return 2, errB },
		func(ctx context.Context) (int, error) { return 3, errC },
	})
	equal(t, 0, v)
	equal(t, 3, len(unwrapAll(err)))
	for _, e := range []error{errA, errB, errC} {
		errIs(t, err, e)
	}
	v2 := mustPanic(t, func() { _, _ = scope.First[int](t.Context(), nil) })
	equal(t, any("scope: First with no tasks"), v2, "no tasks is a programmer error")
}

func TestFirstSuccessJoinerWithRun(t *testing.T) {
	var h []*scope.Handle[int]
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		h = append(h, scope.Spawn(s, func(ctx context.Context) (int, error) { return 0, errA }))
		h = append(h, scope.Spawn(s, func(ctx context.Context) (int, error) { return 7, nil }))
		return nil
	}, scope.WithJoiner(scope.FirstSuccess))
	noErr(t, err)
	v, err := h[1].Wait(context.Background())
	noErr(t, err)
	equal(t, 7, v)
}

// quorum is a user-defined Joiner: the scope completes once n tasks have succeeded, and fails
// once more than tolerate tasks have failed.
type quorum struct {
	n, tolerate  int
	succ, failed int
}

func (q *quorum) Decide(failure error) (cancel, report bool) {
	if failure == nil {
		q.succ++
		return q.succ == q.n, false
	}
	q.failed++
	return q.failed > q.tolerate, true
}

func TestCustomJoiner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := func(outcomes ...error) (time.Duration, error) {
			start := time.Now()
			err := scope.Run(t.Context(), func(s *scope.Scope) error {
				for i, o := range outcomes {
					s.Go(func(ctx context.Context) error {
						select {
						case <-time.After(time.Duration(i+1) * time.Second):
							return o
						case <-ctx.Done():
							return ctx.Err()
						}
					})
				}
				return nil
			}, scope.WithJoiner(func() scope.Joiner { return &quorum{n: 2, tolerate: 1} }))
			return time.Since(start), err
		}
		d, err := run(errA, nil, nil, nil, nil)
		noErr(t, err, "quorum reached: earlier failures dropped")
		equal(t, 3*time.Second, d)

		d, err = run(errA, nil, errB, nil, nil)
		equal(t, 3*time.Second, d, "second failure cancels")
		errs := unwrapAll(err)
		equal(t, 2, len(errs))
		errIs(t, errs[0], errB, "the failure that cancelled is the root cause")
		errIs(t, errs[1], errA)
	})
}

func TestJoinerPerScope(t *testing.T) {
	// Options made once and reused by Runs one after another, and by Runs at the same time:
	// each scope gets a fresh Joiner, so each completes on its own second success. With one
	// shared value, the second Run saw a count of 2 already and never completed.
	synctest.Test(t, func(t *testing.T) {
		var made atomic.Int32
		opts := []scope.Option{
			scope.WithJoiner(func() scope.Joiner { made.Add(1); return &quorum{n: 2, tolerate: 0} }),
			scope.WithTimeout(time.Hour), // only if the Joiner fails to complete the scope
		}
		run := func() error {
			return scope.Run(t.Context(), func(s *scope.Scope) error {
				s.Go(func(ctx context.Context) error { return nil })
				s.Go(func(ctx context.Context) error { return nil })
				s.Go(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
				return nil
			}, opts...)
		}
		start := time.Now()
		for i := range 2 {
			noErr(t, run(), "sequential run %d", i)
		}
		errs := make(chan error, 3)
		for range 3 {
			go func() { errs <- run() }()
		}
		for range 3 {
			noErr(t, <-errs, "concurrent run")
		}
		equal(t, time.Duration(0), time.Since(start), "a scope waited for its Timeout")
		equal(t, int32(5), made.Load(), "one Joiner per Run")
	})
}

func TestTimeoutInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var cause error
		var woke time.Duration
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.Go(func(ctx context.Context) error {
				<-ctx.Done()
				woke = time.Since(start)
				cause = context.Cause(ctx)
				return ctx.Err()
			})
			s.Go(func(ctx context.Context) error { time.Sleep(time.Second); return nil })
			return nil
		}, scope.WithTimeout(1500*time.Millisecond))
		equal(t, 1500*time.Millisecond, woke)
		equal(t, 1500*time.Millisecond, time.Since(start))
		errIs(t, cause, scope.ErrTimeout)
		errIs(t, cause, context.DeadlineExceeded)
		errMsg(t, cause, "scope: timed out after 1.5s")
		// Run reports the scope's deadline as the root cause, naming the task it interrupted.
		errIs(t, err, scope.ErrTimeout)
		errMsg(t, err, "scope: timed out after 1.5s, interrupting task #0")
	})
}

func TestTimeoutNotReachedIsNotAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.Go(func(ctx context.Context) error { time.Sleep(time.Second); return nil })
			return nil
		}, scope.WithTimeout(2*time.Second))
		noErr(t, err)
	})
}

func TestParentDeadlineCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errSLO := errors.New("request SLO exceeded")
		ctx, cancel := context.WithTimeoutCause(t.Context(), 3*time.Second, errSLO)
		defer cancel()
		start := time.Now()
		var cause error
		err := scope.Run(ctx, func(s *scope.Scope) error {
			s.Go(func(ctx context.Context) error {
				<-ctx.Done()
				cause = context.Cause(ctx)
				return ctx.Err()
			})
			return nil
		}, scope.WithTimeout(time.Hour)) // the parent's deadline comes first
		equal(t, 3*time.Second, time.Since(start))
		same(t, errSLO, cause)
		same(t, errSLO, err)
	})
}

// A task that succeeds after the parent ctx was cancelled, ignoring its own ctx, still wins
// (issue 14, item 3): First never returns the zero value with a nil error.
func TestFirstSuccessAfterParentCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	v, err := scope.First(ctx, []func(context.Context) (int, error){
		func(ctx context.Context) (int, error) { cancel(); return 42, nil },
	})
	noErr(t, err, "the cancellation cut nothing short")
	equal(t, 42, v)
}

// The same after the scope's Timeout, and with a sibling that echoed the cancellation: then
// the value comes with Run's error, the cancellation that cut the sibling short.
func TestFirstSuccessAfterTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := func(ctx context.Context) (int, error) { time.Sleep(2 * time.Second); return 42, nil }
		v, err := scope.First(t.Context(), []func(context.Context) (int, error){slow}, scope.WithTimeout(time.Second))
		noErr(t, err)
		equal(t, 42, v)

		echo := func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() }
		v, err = scope.First(t.Context(), []func(context.Context) (int, error){echo, slow}, scope.WithTimeout(time.Second))
		equal(t, 42, v)
		errIs(t, err, scope.ErrTimeout, "the timeout cut the echoing sibling short")
	})
}

// A success does not complete a scope that a failure has already cancelled: under a Joiner
// that cancels on either, the failure stays Run's error.
func TestSuccessAfterFailureCancelDoesNotComplete(t *testing.T) {
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		failed := make(chan struct{})
		s.Go(func(ctx context.Context) error { defer close(failed); return errA })
		s.Go(func(ctx context.Context) error { <-failed; <-ctx.Done(); return nil })
		return nil
	}, scope.WithJoiner(func() scope.Joiner { return cancelEither{} }))
	errIs(t, err, errA)
}

// cancelEither cancels its scope on the first outcome of any kind.
type cancelEither struct{}

func (cancelEither) Decide(error) (cancel, report bool) { return true, true }

// panicOnce panics on its first decision, then reports every failure and cancels nothing.
type panicOnce struct{ calls int }

func (p *panicOnce) Decide(error) (cancel, report bool) {
	if p.calls++; p.calls == 1 {
		panic("decide boom")
	}
	return false, true
}

// A panic in Joiner.Decide reaches Run's caller once every task has returned, like a task's
// panic, instead of crashing the task's goroutine (issue 14, item 4). The scope cancels with it
// as the cause, its lock is not left held (a later failure takes it, and goes to the Joiner),
// and no failure is lost. WithPanicsAsErrors does not turn it into an error: it is not a task's.
func TestJoinerPanicReachesRun(t *testing.T) {
	for _, opts := range [][]scope.Option{nil, {scope.WithLimit(2)}, {scope.WithPanicsAsErrors()}} {
		var cause error
		var sibling atomic.Bool
		v := mustPanic(t, func() {
			_ = scope.Run(t.Context(), func(s *scope.Scope) error {
				started := make(chan struct{})
				s.Go(func(ctx context.Context) error {
					close(started)
					<-ctx.Done()
					cause = context.Cause(ctx)
					sibling.Store(true)
					return errB // a real failure after the cancel: reported, through the Joiner
				})
				s.Go(func(ctx context.Context) error { <-started; return errA })
				return nil
			}, append(opts, scope.WithJoiner(func() scope.Joiner { return &panicOnce{} }))...)
		})
		isTrue(t, sibling.Load(), "Run panicked before every task had returned (%d options)", len(opts))
		pe := outsidePanic(t, v, "Joiner", "decide boom", "panicOnce")
		var pc *scope.PanicError
		errAs(t, cause, &pc)
		same(t, pe, pc, "the cancellation cause is the Joiner's panic")
		errIs(t, pe, errA, "the failure the Joiner panicked on is carried")
		errIs(t, pe, errB, "the later failure is carried")
	}
}
