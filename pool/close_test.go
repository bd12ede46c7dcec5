package pool_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/pool"
)

// Close runs the queue dry and waits for running tasks.
func TestCloseDrains(t *testing.T) {
	p := pool.New(2, 100)
	gate := make(chan struct{})
	var r recorder
	mustSubmit(t, p, bg, waitFor(gate))
	mustSubmit(t, p, bg, waitFor(gate))
	for i := range 50 {
		mustSubmit(t, p, bg, r.task(i))
	}
	closed := make(chan error)
	go func() { closed <- p.Close(bg) }()
	close(gate)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got := r.got(); len(got) != 50 {
		t.Fatalf("ran %d of 50 queued tasks", len(got))
	}
	if err := p.Submit(bg, r.task(99)); err != pool.ErrClosed {
		t.Fatalf("Submit after Close = %v; want ErrClosed", err)
	}
	if err := p.Close(bg); err != nil { // idempotent
		t.Fatalf("second Close = %v", err)
	}
	s := p.Stats()
	if s.Completed != 52 || s.Rejected != 1 || s.Workers != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkIdentity(t, s)
}

// When Close's context ends first, running tasks are cancelled with a shutdown cause, queued
// tasks are abandoned and reported, and Close says how many.
func TestCloseDeadlineAbandons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d drops
		p := pool.New(1, 4, d.hook())
		running, _ := pool.Call(bg, p, func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, context.Cause(ctx)
		})
		var queued []*pool.Handle[int]
		for i := range 3 {
			h, err := pool.Call(context.WithValue(bg, ctxKey{}, i), p, func(context.Context) (int, error) {
				t.Error("abandoned task ran")
				return 0, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			queued = append(queued, h)
		}
		ctx, cancel := context.WithTimeout(bg, 5*time.Second)
		defer cancel()
		start := time.Now()
		err := p.Close(ctx)
		if time.Since(start) != 5*time.Second {
			t.Fatalf("Close gave up after %v; want 5s", time.Since(start))
		}
		if err == nil || err.Error() != "pool: close: 3 queued tasks abandoned, 1 running task cancelled: context deadline exceeded" {
			t.Fatalf("Close = %v", err)
		}
		if _, err := running.Wait(bg); !errors.Is(err, pool.ErrClosed) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("running task's cause = %v", err)
		}
		for i, h := range queued {
			if _, err := h.Wait(bg); !errors.Is(err, pool.ErrDropped) || !errors.Is(err, pool.ErrClosed) {
				t.Fatalf("abandoned handle %d = %v", i, err)
			}
		}
		want := []drop{{pool.ReasonShutdown, 0}, {pool.ReasonShutdown, 1}, {pool.ReasonShutdown, 2}}
		if got := d.got(); !slices.Equal(got, want) {
			t.Fatalf("OnDrop got %v; want %v", got, want)
		}
		s := p.Stats()
		if s.Dropped != (pool.Drops{Shutdown: 3}) || s.Failed != 1 || s.Workers != 0 {
			t.Fatalf("stats %+v", s)
		}
		checkIdentity(t, s)
	})
}

// Close is safe concurrently with submits and other Close calls: every submit either ran or
// got ErrClosed.
func TestCloseConcurrentWithSubmits(t *testing.T) {
	for _, policy := range []pool.Overflow{pool.Block, pool.Reject, pool.DropNewest, pool.DropOldest, pool.CallerRuns} {
		p := pool.New(2, 2, pool.WithOverflow(policy))
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 200 {
					err := p.Submit(bg, func(context.Context) error { return nil })
					if err != nil && err != pool.ErrClosed && err != pool.ErrFull && err != pool.ErrDropped {
						t.Errorf("%v: Submit = %v", policy, err)
					}
				}
			})
		}
		for range 2 {
			wg.Go(func() {
				if err := p.Close(bg); err != nil {
					t.Errorf("%v: Close = %v", policy, err)
				}
			})
		}
		wg.Wait()
		s := p.Stats()
		if s.Submitted != 800 || s.Running+s.Queued+s.Waiting+s.Workers != 0 {
			t.Fatalf("%v: stats %+v", policy, s)
		}
		checkIdentity(t, s)
	}
}

// Close wakes every parked worker to run the queue dry: 8 one-second tasks on 4 workers that
// were all parked when the tasks were queued take 2s, not 8s.
func TestCloseDrainsWithAllWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(4, 16, pool.WithIdleTimeout(time.Hour))
		gate := make(chan struct{})
		for range 4 {
			mustSubmit(t, p, bg, waitFor(gate))
		}
		close(gate)
		synctest.Wait() // 4 parked workers
		for range 8 {
			mustSubmit(t, p, bg, func(context.Context) error { time.Sleep(time.Second); return nil })
		}
		start := time.Now()
		mustClose(t, p)
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("Close drained 8 1s tasks on 4 workers in %v; want 2s", d)
		}
		checkIdentity(t, p.Stats())
	})
}
