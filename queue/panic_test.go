package queue

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
	"github.com/corral-go/corral/retry"
)

// closePanicError closes c and returns the *PanicError Close panicked with (nil if none).
func closePanicError(t *testing.T, c *Consumer[string]) *PanicError {
	t.Helper()
	p := closePanic(c)
	if p == nil {
		return nil
	}
	pe, ok := p.(*PanicError)
	if !ok {
		t.Fatalf("Close panicked with %#v, want a *PanicError", p)
	}
	return pe
}

// OnDeadEvicted, when a worker's Bury made the room, runs on the worker: its panic is
// recovered, the jobs are settled, and Close re-raises it naming the hook.
func TestOnDeadEvictedPanicOnAWorkerSurfacesInClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string](context.Background(), WithDeadLetterLimit(1), WithHooks(Hooks{
			OnDeadEvicted: func(context.Context, Event) { panic("evicted hook bug") },
		}))
		c, _ := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			return retry.Permanent(errors.New("bad"))
		}, WithWorkers(1))
		enqueueOK(t, q, "a")
		enqueueOK(t, q, "b")
		time.Sleep(time.Minute)
		s, _ := q.Stats(context.Background())
		pe := closePanicError(t, c)
		if pe == nil || pe.Where != "OnDeadEvicted" || pe.Value != "evicted hook bug" || len(pe.Stack) == 0 {
			t.Fatalf("Close panicked with %+v, want the OnDeadEvicted hook's panic", pe)
		}
		if s.Dead != 1 || s.DeadEvicted != 1 || s.DeadLetteredTotal() != 2 || s.Ready+s.InFlight != 0 {
			t.Errorf("stats %+v: want both dead-lettered, one dead letter evicted, nothing stored", s)
		}
	})
}

// unreachableOnce is a Memory whose first Receive fails as an unreachable broker's would.
type unreachableOnce struct {
	*memory.Backend
	calls atomic.Int32
}

func (b *unreachableOnce) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	if b.calls.Add(1) == 1 {
		return fmt.Errorf("broker gone: %w", ErrUnavailable)
	}
	return b.Backend.Receive(ctx, lease, d)
}

// OnHealth, when a worker's backend call found the change, runs on the worker: its panic is
// recovered, the worker goes on, and Close re-raises it naming the hook.
func TestOnHealthPanicOnAWorkerSurfacesInClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changes atomic.Int32
		q, _ := New[string](context.Background(), WithBackend(&unreachableOnce{Backend: memory.New()}), WithHooks(Hooks{
			OnHealth: func(context.Context, Health) {
				if changes.Add(1) == 1 {
					panic("health hook bug")
				}
			},
		}))
		acked := make(chan struct{}, 1)
		c, _ := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			acked <- struct{}{}
			return nil
		}, WithWorkers(1))
		// The worker's failed Receive reports the change (and its hook panics) before the
		// Enqueue below, whose success would otherwise report a change of its own first, in
		// this goroutine, if it came between the worker's finding and its hook.
		synctest.Wait()
		enqueueOK(t, q, "x")
		<-acked // the worker went on after the panic: it retried the backend and handled x
		synctest.Wait()
		pe := closePanicError(t, c)
		if pe == nil || pe.Where != "OnHealth" || pe.Value != "health hook bug" {
			t.Fatalf("Close panicked with %+v, want the OnHealth hook's panic", pe)
		}
		if n := changes.Load(); n != 2 || !q.Health().Reachable {
			t.Errorf("%d health changes, reachable %v; want 2 (down, up), reachable", n, q.Health().Reachable)
		}
	})
}

// panickyExtend is a Memory whose Extend panics.
type panickyExtend struct{ *memory.Backend }

func (b panickyExtend) Extend(context.Context, *driver.Delivery, time.Duration) error {
	panic("broken renewal")
}

// A panic in the backend's Extend, on the consumer's renewal goroutine, is recovered like one on
// a worker: intake stops, the running handler's job is settled, and Close re-raises it naming
// the method.
func TestBackendExtendPanicSurfacesInClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string](context.Background(), WithBackend(panickyExtend{memory.New()}))
		c, _ := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			time.Sleep(5 * time.Second) // past a renewal (every 1.5s for a lease of 3s)
			return nil
		}, WithWorkers(1), WithLease(3*time.Second))
		enqueueOK(t, q, "slow")
		enqueueOK(t, q, "next")
		time.Sleep(time.Minute)
		s, _ := q.Stats(context.Background())
		pe := closePanicError(t, c)
		if pe == nil || pe.Where != "Backend.Extend" || pe.Value != "broken renewal" {
			t.Fatalf("Close panicked with %+v, want the Extend panic", pe)
		}
		if s.Acked != 1 || s.Ready != 1 {
			t.Errorf("stats %+v: want slow acked and next not taken (intake stopped)", s)
		}
	})
}

// closeCounter is a Memory that counts its Close calls.
type closeCounter struct {
	*memory.Backend
	closes atomic.Int32
}

func (b *closeCounter) Close(ctx context.Context) error {
	b.closes.Add(1)
	return b.Backend.Close(ctx)
}

// Queue.Close closes a backend given with WithBackend, once: the queue owns it.
func TestQueueCloseClosesTheBackendItOwns(t *testing.T) {
	b := &closeCounter{Backend: memory.New()}
	q, _ := New[string](context.Background(), WithBackend(b))
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if n := b.closes.Load(); n != 1 {
		t.Errorf("backend closed %d times, want 1", n)
	}
	if _, err := b.Enqueue(context.Background(), driver.Message{ID: "x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("the backend's Enqueue after Queue.Close: %v, want ErrClosed", err)
	}
}

// Queue.Close with a ctx that ends closes its consumers as Consumer.Close does at a deadline
// (their handlers cancelled, waited for), still closes the backend, and returns the cause.
func TestQueueCloseAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &closeCounter{Backend: memory.New()}
		q, _ := New[string](context.Background(), WithBackend(b))
		started := make(chan struct{})
		c, _ := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			close(started)
			<-ctx.Done()
			return context.Cause(ctx)
		}, WithWorkers(1))
		enqueueOK(t, q, "stuck")
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if err := q.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close: %v, want the deadline", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("Close returned after %v, want 1s", took)
		}
		if _, err := c.Close(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("the consumer's Close after Queue.Close: %v, want ErrClosed", err)
		}
		if n := b.closes.Load(); n != 1 {
			t.Errorf("backend closed %d times, want 1", n)
		}
	})
}

// A hook's panic that a consumer's Close re-raises does not stop Queue.Close from closing the
// other consumers and the backend; Queue.Close then panics with it, in the caller's goroutine.
func TestQueueClosePanicsAfterClosingEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &closeCounter{Backend: memory.New()}
		var once atomic.Bool
		q, _ := New[string](context.Background(), WithBackend(b), WithHooks(Hooks{
			OnSuccess: func(context.Context, Event) {
				if once.CompareAndSwap(false, true) {
					panic("hook bug")
				}
			},
		}))
		h := func(ctx context.Context, j Job[string]) error { return nil }
		c1, _ := q.Consume(context.Background(), h, WithWorkers(1))
		c2, _ := q.Consume(context.Background(), h, WithWorkers(1))
		enqueueOK(t, q, "x")
		synctest.Wait()
		var p any
		func() {
			defer func() { p = recover() }()
			_ = q.Close(context.Background())
		}()
		if pe, ok := p.(*PanicError); !ok || pe.Where != "OnSuccess" || pe.Value != "hook bug" {
			t.Fatalf("Queue.Close panicked with %#v, want the OnSuccess hook's *PanicError", p)
		}
		for i, c := range []*Consumer[string]{c1, c2} {
			if _, err := c.Close(context.Background()); !errors.Is(err, ErrClosed) {
				t.Errorf("consumer %d's Close after Queue.Close: %v, want ErrClosed", i+1, err)
			}
		}
		if n := b.closes.Load(); n != 1 {
			t.Errorf("backend closed %d times, want 1", n)
		}
	})
}
