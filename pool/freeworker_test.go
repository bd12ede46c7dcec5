package pool_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/corral-go/corral/pool"
)

// The policies under which a pool that cannot take a task at once does not wait.
var noWaitPolicies = []pool.Overflow{pool.Reject, pool.DropNewest, pool.DropOldest, pool.CallerRuns}

var errTask = errors.New("task failed")

// A worker is free for the next task as soon as its task has returned, before it delivers the
// result (issue 14, item 8). Here the worker is held while it delivers a failure (an error, or
// a runtime.Goexit) to Hooks.OnError: a task submitted then, with one worker and a queue of 0,
// is handed to that worker, under every policy that does not wait, instead of being refused or
// run by the submitter.
func TestWorkerFreeWhileItDelivers(t *testing.T) {
	firsts := map[string]func(context.Context) error{
		"error":  func(context.Context) error { return errTask },
		"goexit": func(context.Context) error { runtime.Goexit(); return nil },
	}
	for _, policy := range noWaitPolicies {
		for name, first := range firsts {
			t.Run(policy.String()+"/"+name, func(t *testing.T) {
				inHook := make(chan struct{})
				resume := make(chan struct{})
				var once atomic.Bool
				p := pool.New(1, 0, pool.WithOverflow(policy), onError(func(context.Context, error) {
					if once.CompareAndSwap(false, true) {
						close(inHook)
						<-resume
					}
				}))
				mustSubmit(t, p, bg, first)
				<-inHook // the task has ended; its worker is delivering its failure
				ran := make(chan struct{})
				err := p.Submit(bg, func(context.Context) error { close(ran); return nil })
				close(resume)
				if err != nil {
					t.Fatalf("Submit while the only worker was free: %v", err)
				}
				<-ran
				mustClose(t, p)
				s := p.Stats()
				if s.Inline != 0 || s.Completed != 1 || s.Failed != 1 || s.Workers != 0 {
					t.Fatalf("stats %+v; want the second task run by the worker, not inline", s)
				}
				checkIdentity(t, s)
			})
		}
	}
}

// Call, Wait, Call: the second Call finds the worker that ran the first free, whatever the
// first task did (returned, failed, panicked, called runtime.Goexit). Run it with -race.
func TestCallAfterWaitFindsTheWorkerFree(t *testing.T) {
	const rounds = 4000
	tasks := []func(context.Context) (int, error){
		func(context.Context) (int, error) { return 1, nil },
		func(context.Context) (int, error) { return 0, errTask },
		func(context.Context) (int, error) { panic("task panic") },
		func(context.Context) (int, error) { runtime.Goexit(); return 0, nil },
	}
	for _, policy := range noWaitPolicies {
		t.Run(policy.String(), func(t *testing.T) {
			p := pool.New(1, 0, pool.WithOverflow(policy))
			refused := 0
			for i := range rounds {
				h, err := pool.Call(bg, p, tasks[i%len(tasks)])
				if err != nil {
					refused++
					continue
				}
				h.Wait(bg)
			}
			mustClose(t, p)
			s := p.Stats()
			if refused != 0 || s.Inline != 0 {
				t.Fatalf("%d of %d calls refused, %d run inline, with the only worker free; stats %+v",
					refused, rounds, s.Inline, s)
			}
			if s.Completed+s.Failed+s.Panicked != rounds {
				t.Fatalf("stats %+v; want %d tasks run", s, rounds)
			}
			checkIdentity(t, s)
		})
	}
}
