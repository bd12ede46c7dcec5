package queue

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
	"github.com/corral-go/corral/retry"
)

// closePanic runs c.Close and returns what it panicked with.
func closePanic(c *Consumer[string]) (p any) {
	defer func() { p = recover() }()
	_, _ = c.Close(context.Background())
	return nil
}

// A panicking hook used to leave its job in flight (OnStart) and vanish.
// Now the job is handled and settled as if the hook had returned, and Close
// re-raises the first hook panic.
func TestHookPanicSurfacesInClose(t *testing.T) {
	for _, hook := range []string{"OnStart", "OnSuccess", "OnRetry", "OnDead"} {
		t.Run(hook, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var once atomic.Bool
				bug := func(context.Context, Event) {
					if once.CompareAndSwap(false, true) {
						panic("hook bug")
					}
				}
				var hooks Hooks
				switch hook {
				case "OnStart":
					hooks.OnStart = bug
				case "OnSuccess":
					hooks.OnSuccess = bug
				case "OnRetry":
					hooks.OnRetry = bug
				case "OnDead":
					hooks.OnDead = bug
				}
				q, _ := New[string](context.Background(), WithHooks(hooks))
				var calls atomic.Int32
				c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
					if j.Payload == "poison" {
						return retry.Permanent(errors.New("poison"))
					}
					if calls.Add(1) == 1 && hook == "OnRetry" {
						return errors.New("fail once")
					}
					return nil
				}, WithWorkers(1), WithLease(time.Second), WithBackoff(backoff.Constant(time.Second)))
				if err != nil {
					t.Fatal(err)
				}
				enqueueOK(t, q, "x")
				if hook == "OnDead" {
					enqueueOK(t, q, "poison", WithID("poison"))
				}
				time.Sleep(time.Minute)
				s, _ := q.Stats(context.Background())
				p := closePanic(c)
				hp, ok := p.(*PanicError)
				if !ok || hp.Where != hook || hp.Value != "hook bug" || len(hp.Stack) == 0 {
					t.Fatalf("Close panicked with %#v; want *PanicError from %s", p, hook)
				}
				if s.Acked != 1 || s.InFlight != 0 || s.Ready != 0 || s.Delayed != 0 {
					t.Errorf("stats %+v: want the job acked, nothing left", s)
				}
			})
		})
	}
}

// hangAck is a backend whose Ack blocks until its ctx ends or release is
// closed (a broker partition).
type hangAck struct {
	driver.Backend
	release chan struct{}
}

func (b hangAck) Ack(ctx context.Context, d *driver.Delivery) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-b.release:
	}
	return b.Backend.Ack(ctx, d)
}

// A backend call that hangs used to hold Close past its ctx: settle calls
// ran on an uncancellable context. Now Close's ctx ends them, and the job
// whose ack failed that way is counted as abandoned.
func TestCloseDeadlineEndsHungBackendCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := hangAck{memory.New(), make(chan struct{})}
		defer close(b.release)
		q, _ := New[string](context.Background(), WithBackend(b))
		acking := make(chan struct{})
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			close(acking)
			return nil
		}, WithWorkers(1))
		if err != nil {
			t.Fatal(err)
		}
		enqueueOK(t, q, "x")
		<-acking
		synctest.Wait() // the worker is blocked in Ack
		r := closeTimingOut(t, c)
		if r != (Report{}) { // the handler returned before Close: not its to report
			t.Errorf("report %+v; want nothing", r)
		}
	})
}

// hangReceive is a backend whose Receive makes a broker call that hangs (a
// paused broker) until its call timeout, an hour, under
// driver.Call.UntilDeadline, as the broker backends make theirs.
type hangReceive struct {
	driver.Backend
	entered chan struct{}
}

func (b hangReceive) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	sctx, stop := driver.Call{Name: "hang"}.UntilDeadline(ctx)
	defer stop()
	close(b.entered)
	select {
	case <-sctx.Done():
	case <-time.After(time.Hour): // the call timeout of a patient backend
	}
	return context.Cause(ctx)
}

// A Receive in flight when Close stops intake is waited for, so that it can
// give back what it took, but no longer than Close's ctx: its end abandons
// the call (driver.WithAbandon), and Close returns at its deadline.
func TestCloseDeadlineAbandonsReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := hangReceive{memory.New(), make(chan struct{})}
		q, _ := New[string](context.Background(), WithBackend(b))
		c, err := q.Consume(context.Background(), func(context.Context, Job[string]) error { return nil }, WithWorkers(1))
		if err != nil {
			t.Fatal(err)
		}
		<-b.entered
		synctest.Wait() // the worker is blocked in the broker call
		if r := closeTimingOut(t, c); r != (Report{}) {
			t.Errorf("report %+v; want nothing", r)
		}
	})
}

// closeTimingOut closes c with a ctx of one second, which must run out: Close
// takes exactly that second (virtual time) and returns its deadline.
func closeTimingOut(t *testing.T, c *Consumer[string]) Report {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r, err := c.Close(ctx)
	if took := time.Since(start); took != time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close took %v and returned %v; want 1s and deadline exceeded", took, err)
	}
	return r
}

// A handler that returns after Close's ctx ended: the ack of its job runs
// on the ended backend-call context, fails, and the job is abandoned (the
// backend redelivers it when its lease ends).
func TestCloseDeadlineAbandonsUnsettledJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := hangAck{memory.New(), make(chan struct{})}
		defer close(b.release)
		q, _ := New[string](context.Background(), WithBackend(b))
		started := make(chan struct{})
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			close(started)
			<-ctx.Done()
			return nil // its work is done: acked if the backend can be reached
		}, WithWorkers(1), WithLease(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		enqueueOK(t, q, "x")
		<-started
		r := closeTimingOut(t, c)
		if r != (Report{Abandoned: 1}) {
			t.Errorf("report %+v; want 1 abandoned", r)
		}
		time.Sleep(90 * time.Second) // the backend lease (1.5 min) ends
		if s, _ := q.Stats(context.Background()); s.Ready != 1 || s.InFlight != 0 || s.Acked != 0 {
			t.Errorf("stats %+v; want the job ready again", s)
		}
	})
}

// A job started before its start-by deadline, cancelled by Close's deadline
// and released, came back as attempt 1 and was dead-lettered "expired".
func TestReleasedAtCloseDoesNotExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dead atomic.Int32
		q, _ := New[string](context.Background(), WithHooks(Hooks{OnDead: func(context.Context, Event) { dead.Add(1) }}))
		enqueueOK(t, q, "x", WithStartBy(time.Now().Add(5*time.Second)))
		started := make(chan struct{}, 1)
		c, _ := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			started <- struct{}{}
			<-ctx.Done()
			return context.Cause(ctx)
		}, WithWorkers(1))
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, _ := c.Close(ctx)
		cancel()
		if r != (Report{Returned: 1}) {
			t.Fatalf("report %+v; want 1 returned", r)
		}
		time.Sleep(10 * time.Second)
		var handled atomic.Int32
		c2, _ := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error { handled.Add(1); return nil }, WithWorkers(1))
		time.Sleep(time.Second)
		if _, err := c2.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if dead.Load() != 0 || handled.Load() != 1 {
			t.Errorf("%d dead, %d handled; want the job handled", dead.Load(), handled.Load())
		}
	})
}
