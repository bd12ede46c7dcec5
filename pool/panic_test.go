package pool_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/corral-go/corral/pool"
)

func panicky(context.Context) (int, error) { panic(errBoom) }

var errBoom = errors.New("boom")

// A panic fails its task with a *PanicError (value and stack), is counted, and the worker
// carries on.
func TestPanicFailsTaskNotPool(t *testing.T) {
	var mu sync.Mutex
	var hooked []error
	p := pool.New(1, 4, pool.WithErrorHook(func(_ context.Context, err error) {
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
