package pool_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/pool"
)

// errorCall is a call of Hooks.OnError.
type errorCall struct {
	key any // value of ctxKey in the hook's context
	pool.ErrorEvent
}

// OnError gets the task's submit context and an event with its failure and how long it ran,
// for a task that returned an error, panicked or called runtime.Goexit, on a worker or run for
// its caller (CallerRuns).
func TestOnErrorReportsContextAndDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var calls []errorCall
		p := pool.New(1, 0, pool.WithOverflow(pool.CallerRuns), pool.WithHooks(pool.Hooks{
			OnError: func(ctx context.Context, e pool.ErrorEvent) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, errorCall{ctx.Value(ctxKey{}), e})
			},
		}))
		errA := errors.New("a")
		sleepThen := func(d time.Duration, end func() error) func(context.Context) error {
			return func(context.Context) error { time.Sleep(d); return end() }
		}
		submit := func(key string, fn func(context.Context) error) {
			mustSubmit(t, p, context.WithValue(bg, ctxKey{}, key), fn)
			time.Sleep(10 * time.Second) // longer than any task: the worker is free again
		}
		submit("error", sleepThen(30*time.Millisecond, func() error { return errA }))
		submit("ok", sleepThen(time.Second, func() error { return nil }))
		submit("panic", sleepThen(2*time.Second, func() error { panic("boom") }))
		submit("goexit", sleepThen(5*time.Millisecond, func() error { runtime.Goexit(); return nil }))
		// The worker is busy: CallerRuns runs the next task in the submitter's stead.
		gate := make(chan struct{})
		mustSubmit(t, p, bg, func(context.Context) error { <-gate; return nil })
		mustSubmit(t, p, context.WithValue(bg, ctxKey{}, "inline"), sleepThen(7*time.Millisecond, func() error { return errA }))
		close(gate)
		mustClose(t, p)

		if len(calls) != 4 {
			t.Fatalf("OnError calls: %+v; want 4", calls)
		}
		want := []struct {
			key string
			d   time.Duration
		}{{"error", 30 * time.Millisecond}, {"panic", 2 * time.Second}, {"goexit", 5 * time.Millisecond}, {"inline", 7 * time.Millisecond}}
		for i, w := range want {
			if c := calls[i]; c.key != w.key || c.Duration != w.d {
				t.Errorf("call %d: key %v, duration %v; want %s, %v", i, c.key, c.Duration, w.key, w.d)
			}
		}
		var pe *pool.PanicError
		if calls[0].Err != errA || !errors.As(calls[1].Err, &pe) || pe.Value != "boom" ||
			calls[2].Err != pool.ErrGoexit || calls[3].Err != errA {
			t.Errorf("errors: %v, %v, %v, %v", calls[0].Err, calls[1].Err, calls[2].Err, calls[3].Err)
		}
		// The gate's task ran while the inline one did: 7ms too.
		if s := p.Stats(); s.Run.Sum != 30*time.Millisecond+time.Second+2*time.Second+5*time.Millisecond+7*time.Millisecond+7*time.Millisecond {
			t.Errorf("OnError times the pool's tasks: Run.Sum %v", s.Run.Sum)
		}
	})
}

// OnDrop gets the dropped task's submit context and its reason, for each reason.
func TestOnDropReportsContextAndReason(t *testing.T) {
	var d drops
	p := pool.New(1, 1, pool.WithOverflow(pool.DropNewest), d.hook())
	release := occupy(p)
	key := func(k string) context.Context { return context.WithValue(bg, ctxKey{}, k) }
	expired, cancel := context.WithCancel(key("expired"))
	mustSubmit(t, p, expired, noop) // queued
	cancel()
	if err := p.Submit(key("refused"), noop); !errors.Is(err, pool.ErrDropped) {
		t.Fatalf("Submit to a full pool = %v; want ErrDropped", err)
	}
	release()
	mustClose(t, p)
	want := []drop{{pool.ReasonRefused, "refused"}, {pool.ReasonExpired, "expired"}}
	if got := d.got(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("OnDrop calls %v; want %v", got, want)
	}
}

// The events are slog.LogValuers: a group of their non-zero fields.
func TestEventsLogValue(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	logger.Info("x", "e", pool.DropEvent{Reason: pool.ReasonEvicted})
	logger.Info("x", "e", pool.DropEvent{})
	logger.Info("x", "e", pool.ErrorEvent{Err: errors.New("disk full"), Duration: 1500 * time.Millisecond})
	logger.Info("x", "e", pool.ErrorEvent{Err: pool.ErrGoexit})
	logger.Info("x", "e", pool.ErrorEvent{})
	want := `{"level":"INFO","msg":"x","e":{"reason":"evicted"}}
{"level":"INFO","msg":"x"}
{"level":"INFO","msg":"x","e":{"err":"disk full","duration":1500000000}}
{"level":"INFO","msg":"x","e":{"err":"corral: task called runtime.Goexit"}}
{"level":"INFO","msg":"x"}
`
	if got := buf.String(); got != want {
		t.Errorf("logged\n%s\nwant\n%s", got, want)
	}
}

// A later WithHooks replaces an earlier one whole.
func TestWithHooksReplacesEarlierHooks(t *testing.T) {
	var first, second int
	p := pool.New(1, 0, pool.WithOverflow(pool.DropNewest),
		pool.WithHooks(pool.Hooks{OnDrop: func(context.Context, pool.DropEvent) { first++ }}),
		pool.WithHooks(pool.Hooks{OnError: func(context.Context, pool.ErrorEvent) { second++ }}))
	release := occupy(p)
	_ = p.Submit(bg, noop)
	release()
	mustClose(t, p)
	if first != 0 || second != 0 {
		t.Errorf("first OnDrop called %d times, second OnError %d; want 0, 0", first, second)
	}
}

// With OnError set, a failing task's event costs nothing: no allocation per task.
func TestOnErrorDoesNotAllocate(t *testing.T) {
	var n int
	p := pool.New(1, 64, pool.WithHooks(pool.Hooks{OnError: func(context.Context, pool.ErrorEvent) { n++ }}))
	defer mustClose(t, p)
	errA := errors.New("a")
	done := make(chan struct{}, 1)
	task := func(context.Context) error { done <- struct{}{}; return errA }
	for range 100 {
		mustSubmit(t, p, bg, task)
		<-done
	}
	if allocs := testing.AllocsPerRun(1000, func() {
		_ = p.Submit(bg, task)
		<-done
	}); allocs != 0 {
		t.Errorf("a failing task with OnError allocates %v times; want 0", allocs)
	}
}

// A Goexit in Hooks.OnError is not blamed on the task: it is counted once, the hook is called
// once, and the worker is replaced.
func TestErrorHookGoexitNotBlamedOnTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		p := pool.New(1, 1, onError(func(context.Context, error) {
			if calls.Add(1) == 1 {
				runtime.Goexit()
			}
		}))
		mustSubmit(t, p, bg, func(context.Context) error { return errors.New("x") })
		synctest.Wait()
		mustSubmit(t, p, bg, noop)
		mustClose(t, p)
		s := p.Stats()
		if s.Failed != 1 || s.Completed != 1 || s.Running != 0 || calls.Load() != 1 {
			t.Fatalf("hook calls %d; stats %+v", calls.Load(), s)
		}
		checkIdentity(t, s)
	})
}

// A Goexit in Hooks.OnDrop, for a task skipped as expired, still resolves the task's Handle
// once, and is not blamed on the task.
func TestDropHookGoexitStillResolves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		p := pool.New(1, 2, onDrop(func(context.Context, pool.Reason) {
			if calls.Add(1) == 1 {
				runtime.Goexit()
			}
		}))
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate))
		ctx, cancel := context.WithCancel(bg)
		h, _ := pool.Call(ctx, p, func(context.Context) (int, error) { return 1, nil })
		cancel()
		close(gate)
		if _, err := h.Wait(bg); !errors.Is(err, pool.ErrExpired) {
			t.Fatalf("handle = %v; want ErrExpired", err)
		}
		mustClose(t, p)
		s := p.Stats()
		if s.Skipped != 1 || s.Completed != 1 || s.Failed != 0 || s.Running != 0 || calls.Load() != 1 {
			t.Fatalf("hook calls %d; stats %+v", calls.Load(), s)
		}
		checkIdentity(t, s)
	})
}

// A Goexit in Hooks.OnError of a task run by CallerRuns ends the helper goroutine that ran the
// task, not the submitter; the pool still counts the task once and Close returns.
func TestCallerRunsErrorHookGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 0, pool.WithOverflow(pool.CallerRuns),
			onError(func(context.Context, error) { runtime.Goexit() }))
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate))
		done := make(chan struct{})
		returned := false
		go func() {
			defer close(done)
			p.Submit(bg, func(context.Context) error { return errors.New("x") }) // inline
			returned = true
		}()
		<-done
		close(gate)
		if !returned {
			t.Fatal("Hooks.OnError's Goexit ended the submitter")
		}
		mustClose(t, p)
		s := p.Stats()
		if s.Failed != 1 || s.Completed != 1 || s.Running != 0 {
			t.Fatalf("stats %+v", s)
		}
		checkIdentity(t, s)
	})
}
