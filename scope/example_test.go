package scope_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/scope"
)

func ExampleRun() {
	lengths := make([]int, 3)
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		for i, word := range []string{"structured", "concurrency", "go"} {
			s.Go(func(ctx context.Context) error {
				lengths[i] = len(word)
				return nil
			})
		}
		return nil
	})
	// Run has returned: every task has too.
	fmt.Println(lengths, err)
	// Output: [10 11 2] <nil>
}

func ExampleScope_Go() {
	errNotFound := errors.New("not found")
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error {
			<-ctx.Done() // cancelled by the sibling's failure
			fmt.Println("cause:", context.Cause(ctx))
			return ctx.Err() // only an echo of the cancellation: not reported
		})
		s.GoNamed("lookup", func(ctx context.Context) error { return errNotFound })
		return nil
	})
	fmt.Println("err:", err)
	fmt.Println("is not found:", errors.Is(err, errNotFound))
	// Output:
	// cause: scope: task "lookup" failed: not found
	// err: scope: task "lookup" failed: not found
	// is not found: true
}

func ExampleWithLimit() {
	var running, most atomic.Int32
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		for range 100 {
			s.Go(func(ctx context.Context) error { // blocks while 4 tasks run
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				return nil
			})
		}
		return nil
	}, scope.WithLimit(4))
	fmt.Println(err, most.Load() <= 4)
	// Output: <nil> true
}

func ExampleSupervise() {
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		for _, name := range []string{"a", "b", "c"} {
			s.GoNamed(name, func(ctx context.Context) error {
				if name == "b" {
					return errors.New("disk full")
				}
				return nil // a and c run to completion: nothing is cancelled
			})
		}
		return nil
	}, scope.WithJoiner(scope.Supervise))
	fmt.Println(err)
	// Output: scope: task "b" failed: disk full
}

func ExampleFirst() {
	replica := func(name string, delay time.Duration) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			select {
			case <-time.After(delay):
				return "answer from " + name, nil
			case <-ctx.Done(): // lost the race
				return "", ctx.Err()
			}
		}
	}
	v, err := scope.First(context.Background(), []func(context.Context) (string, error){
		replica("slow", time.Hour),
		replica("fast", time.Millisecond),
	})
	fmt.Println(v, err)
	// Output: answer from fast <nil>
}

// A Joiner of your own: complete the scope once two tasks have succeeded.
type twoSuccesses struct{ n int }

func (p *twoSuccesses) Decide(failure error) (cancel, report bool) {
	if failure != nil {
		return false, true
	}
	p.n++
	return p.n == 2, false
}

func ExampleJoiner() {
	var cancelled atomic.Int32
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error {
			<-ctx.Done() // cancelled once the two others have succeeded
			cancelled.Add(1)
			return ctx.Err()
		})
		s.Go(func(ctx context.Context) error { return nil })
		s.Go(func(ctx context.Context) error { return nil })
		return nil
	}, scope.WithJoiner(func() scope.Joiner { return &twoSuccesses{} })) // a fresh count per Run
	fmt.Println(err, cancelled.Load())
	// Output: <nil> 1
}

func ExampleSpawn() {
	ctx := context.Background()
	err := scope.Run(ctx, func(s *scope.Scope) error {
		user := scope.Spawn(s, func(ctx context.Context) (string, error) { return "ada", nil })
		greeting := scope.Spawn(s, func(ctx context.Context) (string, error) {
			name, err := user.Wait(ctx) // a task may wait on another's handle
			return "hello, " + name, err
		})
		v, err := greeting.Wait(ctx)
		fmt.Println(v)
		return err
	})
	fmt.Println(err)
	// Output:
	// hello, ada
	// <nil>
}

func ExampleMap() {
	upper, err := scope.Map(context.Background(), []string{"a", "b", "c"},
		func(ctx context.Context, s string) (string, error) { return strings.ToUpper(s), nil },
		scope.WithLimit(2))
	fmt.Println(upper, err)
	// Output: [A B C] <nil>
}

func ExampleMapSeq() {
	squares := scope.MapSeq(context.Background(), slices.Values([]int{1, 2, 3, 4, 5, 6}),
		func(ctx context.Context, v int) (int, error) { return v * v, nil },
		scope.WithLimit(3))
	for sq, err := range squares {
		if err != nil {
			fmt.Println(err)
			break
		}
		if sq > 10 {
			break // cancels and joins the calls still running
		}
		fmt.Println(sq)
	}
	// Output:
	// 1
	// 4
	// 9
}

func ExampleWithTimeout() {
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error {
			<-ctx.Done() // a task that only stops when told
			return ctx.Err()
		})
		return nil
	}, scope.WithTimeout(10*time.Millisecond))
	fmt.Println(err)
	fmt.Println(errors.Is(err, scope.ErrTimeout), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// scope: timed out after 10ms, interrupting task #0
	// true true
}

func ExampleTimeoutError() {
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		for _, b := range []string{"b0", "b1", "b2"} {
			s.GoNamed(b, func(ctx context.Context) error {
				if b == "b1" {
					<-ctx.Done() // a backend that does not answer
					return fmt.Errorf("%s: %w", b, ctx.Err())
				}
				return nil
			})
		}
		return nil
	}, scope.WithTimeout(10*time.Millisecond), scope.WithJoiner(scope.Supervise))
	var te *scope.TimeoutError
	if errors.As(err, &te) {
		for _, t := range te.Interrupted {
			fmt.Printf("%s (#%d): %v\n", t.Name, t.Index, t.Err)
		}
	}
	fmt.Println(err)
	// Output:
	// b1 (#1): b1: context deadline exceeded
	// scope: timed out after 10ms, interrupting task "b1" (#1)
}

func ExampleFirstSuccess() {
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error { return errors.New("replica 1 down") })
		s.Go(func(ctx context.Context) error { return nil })
		return nil
	}, scope.WithJoiner(scope.FirstSuccess))
	fmt.Println(err) // the failure is dropped: a task succeeded
	// Output: <nil>
}

// Errors lists every failure of a scope once, however many there are: under Supervise,
// each failed task's *TaskError.
func ExampleErrors() {
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		for _, name := range []string{"eu", "us", "ap"} {
			s.GoNamed(name, func(ctx context.Context) error {
				if name == "us" {
					return nil
				}
				return fmt.Errorf("region %s unreachable", name)
			})
		}
		return nil
	}, scope.WithJoiner(scope.Supervise), scope.WithLimit(1)) // one at a time: a fixed order
	failures := scope.Errors(err)
	fmt.Println(len(failures), "failures")
	for _, f := range failures {
		var te *scope.TaskError
		if errors.As(f, &te) {
			fmt.Printf("task %s (#%d): %v\n", te.Name, te.Index, te.Err)
		}
	}
	// Output:
	// 2 failures
	// task eu (#0): region eu unreachable
	// task ap (#2): region ap unreachable
}

// A waiter may stop waiting for a Handle when its own context ends; the task goes on, owned by
// the scope.
func ExampleHandle_Wait() {
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		slow := scope.Spawn(s, func(ctx context.Context) (string, error) {
			<-ctx.Done() // stops only when the scope is cancelled
			return "", ctx.Err()
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_, err := slow.Wait(ctx)
		fmt.Println("gave up waiting:", err)
		return errors.New("no answer in time") // fails the scope, which cancels slow
	})
	fmt.Println(err)
	// Output:
	// gave up waiting: context deadline exceeded
	// no answer in time
}
