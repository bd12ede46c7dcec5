package scope_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/corral-go/corral/scope"
)

// starters start a task in a scope in each of the four ways, reporting whether it was accepted.
var starters = []struct {
	name  string
	start func(s *scope.Scope, task func(context.Context) error) bool
}{
	{"Go", func(s *scope.Scope, task func(context.Context) error) bool { s.Go(task); return true }},
	{"GoNamed", func(s *scope.Scope, task func(context.Context) error) bool { s.GoNamed("late", task); return true }},
	{"TryGo", func(s *scope.Scope, task func(context.Context) error) bool { return s.TryGo(task) }},
	{"Spawn", func(s *scope.Scope, task func(context.Context) error) bool {
		scope.Spawn(s, func(ctx context.Context) (int, error) { return 0, task(ctx) })
		return true
	}},
}

// A goroutine that is not a task of the scope starts a task at about the moment Run returns
// (issue 14, item 1). Every such call either starts a task that Run joins, or panics in the
// calling goroutine with the package's message; no task starts after Run returned, and no
// other goroutine crashes. Run it with -race: the join and the start must not race.
func TestStartRacingRunReturn(t *testing.T) {
	const rounds = 2000
	for _, opts := range [][]scope.Option{nil, {scope.WithLimit(4)}} {
		for _, st := range starters {
			t.Run(fmt.Sprintf("%s/limit%d", st.name, len(opts)*4), func(t *testing.T) {
				joined := 0
				for i := range rounds {
					if raceRunReturn(t, st.start, opts, i%2 == 0) {
						joined++
					}
				}
				t.Logf("%d of %d calls joined, %d panicked", joined, rounds, rounds-joined)
			})
		}
	}
}

// raceRunReturn runs one round: the body's only task returns as a goroutine outside the scope
// starts another. It reports whether that start was accepted (and so joined by Run).
func raceRunReturn(t *testing.T, start func(*scope.Scope, func(context.Context) error) bool, opts []scope.Option, yield bool) bool {
	t.Helper()
	var started, ended atomic.Int32 // of the late task
	late := func(context.Context) error {
		started.Add(1)
		ended.Add(1)
		return nil
	}
	type result struct {
		accepted bool
		v        any // what the call panicked with, or nil
	}
	res := make(chan result, 1)
	ready := make(chan struct{})
	var sc *scope.Scope
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		sc = s
		s.Go(func(context.Context) error { <-ready; return nil })
		go func() { // not a task of s: the test waits for it below
			var r result
			defer func() {
				r.v = recover()
				res <- r
			}()
			close(ready)
			if yield {
				runtime.Gosched()
			}
			r.accepted = start(s, late)
		}()
		return nil
	}, opts...)
	endedAtReturn := ended.Load()
	noErr(t, err)
	r := <-res
	if r.v != nil {
		equal(t, any("scope: task started after Run returned"), r.v, "the racing call's panic")
		equal(t, int32(0), started.Load(), "a task was started by a call that panicked")
		equal(t, 0, sc.Skipped())
		return false
	}
	isTrue(t, r.accepted, "a clean scope with room refused the task")
	equal(t, int32(1), endedAtReturn, "an accepted task had not ended when Run returned")
	equal(t, int32(1), started.Load(), "the accepted task ran more than once")
	return true
}
