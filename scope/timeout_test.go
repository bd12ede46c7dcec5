package scope_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/scope"
)

// A timeout names the tasks it interrupted (issue 27, item 12): of 20 backends fanned out
// under Supervise and WithTimeout, 2 fail, 2 hang until the timeout and return ctx.Err(), the
// rest succeed. Run's error holds the timeout first, naming exactly the 2 hung tasks by name
// and index, then the 2 failures; the hung tasks are not failures of their own.
func TestTimeoutNamesTheTasksItInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := map[int]bool{6: true, 13: true}
		fail := map[int]bool{3: true, 17: true}
		start := time.Now()
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			for i := range 20 {
				s.GoNamed(fmt.Sprint("b", i), func(ctx context.Context) error {
					time.Sleep(time.Duration(i) * time.Millisecond)
					switch {
					case hang[i]:
						<-ctx.Done()
						return fmt.Errorf("b%d: %w", i, ctx.Err())
					case fail[i]:
						return fmt.Errorf("b%d: HTTP 500", i)
					}
					return nil
				})
			}
			return nil
		}, scope.WithTimeout(2*time.Second), scope.WithJoiner(scope.Supervise))
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("Run took %v, want 2s", took)
		}
		errIs(t, err, scope.ErrTimeout)
		errIs(t, err, context.DeadlineExceeded)
		list := scope.Errors(err)
		if len(list) != 3 {
			t.Fatalf("Errors: %d %q, want the timeout and the 2 failures", len(list), list)
		}
		var te *scope.TimeoutError
		if !errors.As(list[0], &te) {
			t.Fatalf("first element %T %v, want a *scope.TimeoutError", list[0], list[0])
		}
		if te.Timeout != 2*time.Second || len(te.Interrupted) != 2 {
			t.Fatalf("timeout %v interrupting %d tasks, want 2s and 2", te.Timeout, len(te.Interrupted))
		}
		for j, want := range []int{6, 13} {
			it := te.Interrupted[j]
			if it.Index != want || it.Name != fmt.Sprint("b", want) || !errors.Is(it.Err, context.DeadlineExceeded) {
				t.Errorf("interrupted[%d] = %q #%d (%v), want b%d #%d and its ctx.Err()", j, it.Name, it.Index, it.Err, want, want)
			}
		}
		errMsg(t, list[0], `scope: timed out after 2s, interrupting tasks "b6" (#6), "b13" (#13)`)
		for j, want := range []int{3, 17} {
			var fe *scope.TaskError
			if !errors.As(list[1+j], &fe) || fe.Index != want {
				t.Errorf("failure %d: %v, want task #%d's", j, list[1+j], want)
			}
		}
	})
}

// The cause the tasks see names no task: it is the timeout alone. A timeout that interrupted
// nothing is reported as it was (here: it skipped a task), and one that a scope's own failure
// preceded names no task either.
func TestTimeoutCauseNamesNoTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cause error
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.Go(func(ctx context.Context) error {
				<-ctx.Done()
				cause = context.Cause(ctx)
				return ctx.Err()
			})
			return nil
		}, scope.WithTimeout(time.Second))
		errMsg(t, cause, "scope: timed out after 1s")
		errMsg(t, err, "scope: timed out after 1s, interrupting task #0")

		err = scope.Run(t.Context(), func(s *scope.Scope) error {
			s.Go(func(ctx context.Context) error { return errA })
			s.Go(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
			return nil
		}, scope.WithTimeout(time.Second))
		var te *scope.TimeoutError
		if errors.As(err, &te) {
			t.Errorf("a scope its own failure cancelled reports a timeout: %v", err)
		}
	})
}
