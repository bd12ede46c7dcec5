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

func ExampleLimit() {
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
	}, scope.Limit(4))
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
	}, scope.WithPolicy(scope.Supervise))
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

// A policy of your own: complete the scope once two tasks have succeeded.
type twoSuccesses struct{ n int }

func (p *twoSuccesses) Decide(failure error) (cancel, report bool) {
	if failure != nil {
		return false, true
	}
	p.n++
	return p.n == 2, false
}

func ExamplePolicy() {
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
	}, scope.WithPolicy(func() scope.Policy { return &twoSuccesses{} })) // a fresh count per Run
	fmt.Println(err, cancelled.Load())
	// Output: <nil> 1
}

func ExampleSpawn() {
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		user := scope.Spawn(s, func(ctx context.Context) (string, error) { return "ada", nil })
		greeting := scope.Spawn(s, func(ctx context.Context) (string, error) {
			name, err := user.Wait()
			return "hello, " + name, err
		})
		v, err := greeting.Wait()
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
		scope.Limit(2))
	fmt.Println(upper, err)
	// Output: [A B C] <nil>
}

func ExampleMapSeq() {
	squares := scope.MapSeq(context.Background(), slices.Values([]int{1, 2, 3, 4, 5, 6}),
		func(ctx context.Context, v int) (int, error) { return v * v, nil },
		scope.Limit(3))
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

func ExampleTimeout() {
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error {
			<-ctx.Done() // a task that only stops when told
			return ctx.Err()
		})
		return nil
	}, scope.Timeout(10*time.Millisecond))
	fmt.Println(err)
	fmt.Println(errors.Is(err, scope.ErrTimeout), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// scope: timed out after 10ms
	// true true
}

func ExampleFirstSuccess() {
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		s.Go(func(ctx context.Context) error { return errors.New("replica 1 down") })
		s.Go(func(ctx context.Context) error { return nil })
		return nil
	}, scope.WithPolicy(scope.FirstSuccess))
	fmt.Println(err) // the failure is dropped: a task succeeded
	// Output: <nil>
}
