package pool_test

import (
	"context"
	"testing"

	"github.com/corral-go/corral/pool"
)

// The documented "synchronizes before" rules, checked by the race detector: each task writes
// a plain variable, read without other synchronization after the call that promises to
// order it (run with -race).

func TestTaskReturnSynchronizesBeforeCloseAndStats(t *testing.T) {
	p := pool.New(2, 8)
	var wrote [16]int
	for i := range wrote {
		if i%2 == 0 {
			mustSubmit(t, p, bg, func(context.Context) error { wrote[i] = i + 1; return nil })
			continue
		}
		if _, err := pool.Call(bg, p, func(context.Context) (int, error) { wrote[i] = i + 1; return i, nil }); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, p)
	for i, v := range wrote {
		if v != i+1 {
			t.Fatalf("task %d wrote %d; want %d", i, v, i+1)
		}
	}
	if s := p.Stats(); s.Completed != uint64(len(wrote)) {
		t.Fatalf("Completed = %d; want %d", s.Completed, len(wrote))
	}
}

func TestTaskReturnSynchronizesBeforeGroupWaitAndHandleWait(t *testing.T) {
	p := pool.New(2, 0)
	defer mustClose(t, p)
	g := p.Group(bg)
	var wrote [8]int
	for i := range wrote {
		g.Go(func(context.Context) error { wrote[i] = i + 1; return nil })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, v := range wrote {
		if v != i+1 {
			t.Fatalf("group task %d wrote %d; want %d", i, v, i+1)
		}
	}
	var side int
	h, err := pool.Call(bg, p, func(context.Context) (int, error) { side = 7; return 1, nil })
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.Wait(bg); v != 1 || err != nil || side != 7 {
		t.Fatalf("Wait = %d, %v with side %d; want 1, nil, 7", v, err, side)
	}
}
