package pool_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/scope"
)

func panicky(context.Context) (int, error) { panic(errBoom) }

var errBoom = errors.New("boom")

// A panic fails its task with a *PanicError (value and stack), is counted, and the worker
// carries on.
func TestPanicFailsTaskNotPool(t *testing.T) {
	var mu sync.Mutex
	var hooked []error
	p := pool.New(1, 4, onError(func(_ context.Context, err error) {
		mu.Lock()
		hooked = append(hooked, err)
		mu.Unlock()
	}))
	h, err := pool.Call(bg, p, panicky)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Wait(bg)
	var pe *pool.PanicError
	if !errors.As(err, &pe) || pe.Value != errBoom || !errors.Is(err, errBoom) {
		t.Fatalf("handle = %v; want *PanicError(boom)", err)
	}
	if !strings.Contains(string(pe.Stack), "panicky") {
		t.Fatalf("stack does not show the panic site:\n%s", pe.Stack)
	}
	if err.Error() != "pool: task panicked: boom" {
		t.Fatalf("message %q", err.Error())
	}
	mustSubmit(t, p, bg, func(context.Context) error { panic("plain") })
	// The single worker survived both panics.
	h2, _ := pool.Call(bg, p, func(context.Context) (int, error) { return 42, nil })
	if v, err := h2.Wait(bg); v != 42 || err != nil {
		t.Fatalf("after panics: %v, %v", v, err)
	}
	mustClose(t, p)
	mu.Lock()
	defer mu.Unlock()
	if len(hooked) != 1 || !errors.As(hooked[0], &pe) || pe.Value != "plain" {
		t.Fatalf("error hook got %v", hooked)
	}
	s := p.Stats()
	if s.Panicked != 2 || s.Completed != 1 || s.Failed != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkIdentity(t, s)
}

// A task that calls runtime.Goexit (as t.FailNow does) fails; the pool replaces the worker.
func TestGoexitFailsTask(t *testing.T) {
	p := pool.New(1, 4)
	gate := make(chan struct{})
	mustSubmit(t, p, bg, waitFor(gate))
	h, _ := pool.Call(bg, p, func(context.Context) (int, error) { runtime.Goexit(); return 0, nil })
	h2, _ := pool.Call(bg, p, func(context.Context) (int, error) { return 1, nil })
	close(gate)
	if _, err := h.Wait(bg); err == nil || !strings.Contains(err.Error(), "Goexit") {
		t.Fatalf("Goexit handle = %v", err)
	}
	if v, err := h2.Wait(bg); v != 1 || err != nil {
		t.Fatalf("task after Goexit = %v, %v", v, err)
	}
	mustClose(t, p)
	s := p.Stats()
	if s.Failed != 1 || s.Completed != 2 || s.Workers != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkIdentity(t, s)
}

// A task that CallerRuns runs for its submitter and that calls runtime.Goexit fails with
// ErrGoexit, like a worker's task; Submit and Call return (issue 14, item 9).
func TestCallerRunsGoexitIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hooked := make(chan error, 1)
		p := pool.New(1, 0, pool.WithOverflow(pool.CallerRuns),
			onError(func(_ context.Context, err error) { hooked <- err }))
		gate := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate)) // the only worker is busy: the next tasks run inline
		var submitErr, callErr, waitErr error
		returned := false
		done := make(chan struct{})
		go func() { // a Goexit that escapes ends this goroutine, not the test's
			defer close(done)
			submitErr = p.Submit(bg, func(context.Context) error { runtime.Goexit(); return nil })
			var h *pool.Handle[int]
			h, callErr = pool.Call(bg, p, func(context.Context) (int, error) { runtime.Goexit(); return 1, nil })
			_, waitErr = h.Wait(bg)
			returned = true
		}()
		<-done
		close(gate)
		if !returned {
			t.Fatal("a CallerRuns task's runtime.Goexit ended its submitter")
		}
		if submitErr != nil || callErr != nil {
			t.Fatalf("Submit = %v, Call = %v; want both accepted", submitErr, callErr)
		}
		if err := <-hooked; !errors.Is(err, pool.ErrGoexit) {
			t.Fatalf("error hook got %v; want ErrGoexit", err)
		}
		if !errors.Is(waitErr, pool.ErrGoexit) {
			t.Fatalf("Handle.Wait = %v; want ErrGoexit", waitErr)
		}
		mustClose(t, p)
		s := p.Stats()
		if s.Failed != 2 || s.Inline != 2 || s.Completed != 1 {
			t.Fatalf("stats %+v; want 2 inline tasks failed", s)
		}
		checkIdentity(t, s)
	})
}

// pool.PanicError and scope.PanicError are one type: errors.As with either name finds a
// pool task's panic, which has Name "" and Index -1 and keeps the pool's message.
func TestPanicErrorIsScopes(t *testing.T) {
	p := pool.New(1, 0)
	defer mustClose(t, p)
	h, err := pool.Call(bg, p, panicky)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Wait(bg)
	var se *scope.PanicError
	if !errors.As(err, &se) || se.Value != errBoom || se.Name != "" || se.Index != -1 {
		t.Fatalf("errors.As(%v, *scope.PanicError) = %+v; want Value boom, Name \"\", Index -1", err, se)
	}
	if err.Error() != "pool: task panicked: boom" {
		t.Fatalf("message %q; want %q", err.Error(), "pool: task panicked: boom")
	}
	serr := scope.Run(bg, func(s *scope.Scope) error {
		s.Go(func(context.Context) error { panic("in scope") })
		return nil
	}, scope.WithPanicsAsErrors())
	var pe *pool.PanicError
	if !errors.As(serr, &pe) || pe.Value != "in scope" || pe.Index != 0 {
		t.Fatalf("errors.As(%v, *pool.PanicError) = %+v; want the scope task's panic", serr, pe)
	}
}
