package scope_test

// The semantics of golang.org/x/sync/errgroup's own tests (TestZeroGroup, TestWithContext,
// TestCancelCause, TestTryGo, TestGoLimit), restated against scope as regression tests. Where
// scope deliberately differs (every failure reported, not only the first; a cause that names
// the task), the test says so.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/corral-go/corral/scope"
)

func TestErrgroupZeroGroup(t *testing.T) {
	// errgroup's zero Group does not cancel; scope's equivalent is Supervise.
	err1 := errors.New("errgroup_test: 1")
	err2 := errors.New("errgroup_test: 2")
	for _, errs := range [][]error{{}, {nil}, {err1}, {err1, nil}, {err1, nil, err2}} {
		var want []error
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			for _, e := range errs {
				h := scope.Spawn(s, func(ctx context.Context) (int, error) { return 0, e })
				<-h.Done() // one at a time, so the order of failures is known
				if e != nil {
					want = append(want, e)
				}
			}
			return nil
		}, scope.WithJoiner(scope.Supervise))
		got := unwrapAll(err)
		equal(t, len(want), len(got), "errs %v: Run() = %v", errs, err)
		for i := range want {
			errIs(t, got[i], want[i], "errs %v: element %d", errs, i)
		}
	}
}

func TestErrgroupWithContext(t *testing.T) {
	errDoom := errors.New("group_test: doomed")
	for _, c := range []struct {
		errs []error
		want error
	}{{want: nil}, {errs: []error{nil}}, {errs: []error{errDoom}, want: errDoom}, {errs: []error{errDoom, nil}, want: errDoom}} {
		var taskCtx context.Context
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.Go(func(ctx context.Context) error { taskCtx = ctx; return nil })
			for _, e := range c.errs {
				s.Go(func(ctx context.Context) error { return e })
			}
			return nil
		})
		if c.want == nil {
			noErr(t, err, "errs %v", c.errs)
		} else {
			errIs(t, err, c.want, "errs %v", c.errs)
			var te *scope.TaskError
			errAs(t, err, &te)
		}
		select {
		case <-taskCtx.Done():
		default:
			t.Fatalf("errs %v: the tasks' context is not done after Run returned", c.errs)
		}
	}
}

func TestErrgroupCancelCause(t *testing.T) {
	errDoom := errors.New("group_test: doomed")
	for _, errs := range [][]error{nil, {nil}, {errDoom}, {errDoom, nil}} {
		var taskCtx context.Context
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.TryGo(func(ctx context.Context) error { taskCtx = ctx; return nil })
			for _, e := range errs {
				s.TryGo(func(ctx context.Context) error { return e })
			}
			return nil
		})
		cause := context.Cause(taskCtx)
		if err == nil {
			// errgroup leaves context.Canceled; scope's cause matches it and says why.
			errIs(t, taskCtx.Err(), context.Canceled)
			errIs(t, cause, context.Canceled)
			errMsg(t, cause, "scope: Run returned")
			continue
		}
		errIs(t, err, errDoom)
		same(t, err, cause, "the cause is Run's root cause, a *TaskError wrapping the error")
		errIs(t, cause, errDoom)
	}
}

func TestErrgroupTryGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 42
		ch := make(chan struct{})
		fn := func(ctx context.Context) error { ch <- struct{}{}; return nil }
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			for i := range n {
				isTrue(t, s.TryGo(fn), "TryGo %d of %d under Limit(%d)", i, n, n)
			}
			isTrue(t, !s.TryGo(fn), "TryGo beyond the limit")
			for range n {
				<-ch
			}
			synctest.Wait() // every worker is idle again
			isTrue(t, s.TryGo(fn), "TryGo once the tasks ended")
			<-ch
			return nil
		}, scope.WithLimit(n))
		noErr(t, err)

		err = scope.Run(t.Context(), func(s *scope.Scope) error {
			isTrue(t, s.TryGo(fn), "first TryGo under Limit(1)")
			isTrue(t, !s.TryGo(fn), "second TryGo under Limit(1)")
			<-ch
			return nil
		}, scope.WithLimit(1))
		noErr(t, err)
	})
}

func TestErrgroupGoLimit(t *testing.T) {
	const limit = 10
	var active atomic.Int32
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		for range 1 << 10 {
			s.Go(func(ctx context.Context) error {
				n := active.Add(1)
				defer active.Add(-1)
				if n > limit {
					return fmt.Errorf("saw %d active tasks; want <= %d", n, limit)
				}
				runtime.Gosched() // let others increment active
				return nil
			})
		}
		return nil
	}, scope.WithLimit(limit))
	noErr(t, err)
}
