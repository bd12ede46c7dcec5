package queue

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
)

// A lease shorter than a millisecond: renewals used to tick at most every
// millisecond, so the backend lease (1.5 times the lease) ended between two
// ticks and the job went to a second worker while its handler still ran.
func TestTinyLeaseNeverInFlightTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string]()
		var running, most, runs atomic.Int32
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			if j.Payload != "J" {
				return nil
			}
			runs.Add(1)
			n := running.Add(1)
			if n > most.Load() {
				most.Store(n)
			}
			defer running.Add(-1)
			<-ctx.Done()
			time.Sleep(2 * time.Millisecond) // winds down after its lease
			return context.Cause(ctx)
		}, Workers(2), Lease(100*time.Microsecond))
		if err != nil {
			t.Fatal(err)
		}
		enqueueOK(t, q, "J", WithID("J"))
		time.Sleep(500 * time.Microsecond)
		enqueueOK(t, q, "other") // wakes the idle worker
		time.Sleep(5 * time.Millisecond)
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if most.Load() != 1 || runs.Load() != 1 {
			t.Errorf("job J ran %d times, %d at once; want once", runs.Load(), most.Load())
		}
	})
}

// lostLease is a backend that refuses every lease renewal.
type lostLease struct{ Backend }

func (lostLease) Extend(context.Context, *Delivery, time.Duration) error { return ErrLeaseLost }

// When the backend refuses to renew a lease, the handler's ctx is cancelled
// with cause ErrLeaseLost at the first renewal (half a lease in).
func TestLeaseLostCancelsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string](WithBackend(lostLease{NewMemory()}))
		start := time.Now()
		type result struct {
			cause error
			after time.Duration
		}
		got := make(chan result, 1)
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			<-ctx.Done()
			got <- result{context.Cause(ctx), time.Since(start)}
			return context.Cause(ctx)
		}, Workers(1), Lease(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		enqueueOK(t, q, "x")
		r := <-got
		if !errors.Is(r.cause, ErrLeaseLost) || r.after != 30*time.Minute {
			t.Errorf("handler ctx ended after %v with %v; want 30m0s and ErrLeaseLost", r.after, r.cause)
		}
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func enqueueOK(t *testing.T, q *Queue[string], p string, opts ...EnqueueOption) {
	t.Helper()
	if _, err := q.Enqueue(context.Background(), p, opts...); err != nil {
		t.Fatal(err)
	}
}

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
				bug := func(Event) {
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
				q, _ := New[string](WithHooks(hooks))
				var calls atomic.Int32
				c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
					if j.Payload == "poison" {
						return retry.Permanent(errors.New("poison"))
					}
					if calls.Add(1) == 1 && hook == "OnRetry" {
						return errors.New("fail once")
					}
					return nil
				}, Workers(1), Lease(time.Second), Backoff(backoff.Constant(time.Second)))
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
				hp, ok := p.(*HookPanic)
				if !ok || hp.Hook != hook || hp.Value != "hook bug" || len(hp.Stack) == 0 {
					t.Fatalf("Close panicked with %#v; want *HookPanic from %s", p, hook)
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
	Backend
	release chan struct{}
}

func (b hangAck) Ack(ctx context.Context, d *Delivery) error {
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
		b := hangAck{NewMemory(), make(chan struct{})}
		defer close(b.release)
		q, _ := New[string](WithBackend(b))
		acking := make(chan struct{})
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			close(acking)
			return nil
		}, Workers(1))
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
		b := hangAck{NewMemory(), make(chan struct{})}
		defer close(b.release)
		q, _ := New[string](WithBackend(b))
		started := make(chan struct{})
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			close(started)
			<-ctx.Done()
			return nil // its work is done: acked if the backend can be reached
		}, Workers(1), Lease(time.Minute))
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
		q, _ := New[string](WithHooks(Hooks{OnDead: func(Event) { dead.Add(1) }}))
		enqueueOK(t, q, "x", StartBy(time.Now().Add(5*time.Second)))
		started := make(chan struct{}, 1)
		c, _ := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			started <- struct{}{}
			<-ctx.Done()
			return context.Cause(ctx)
		}, Workers(1))
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, _ := c.Close(ctx)
		cancel()
		if r != (Report{Returned: 1}) {
			t.Fatalf("report %+v; want 1 returned", r)
		}
		time.Sleep(10 * time.Second)
		var handled atomic.Int32
		c2, _ := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error { handled.Add(1); return nil }, Workers(1))
		time.Sleep(time.Second)
		if _, err := c2.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if dead.Load() != 0 || handled.Load() != 1 {
			t.Errorf("%d dead, %d handled; want the job handled", dead.Load(), handled.Load())
		}
	})
}

// A delayed job queued behind a busy ordering key counted as ready.
func TestStatsDelayedBehindKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string]()
		enqueueOK(t, q, "a", WithKey("k"))
		enqueueOK(t, q, "b", WithKey("k"), WithDelay(time.Hour))
		enqueueOK(t, q, "c", WithKey("k"), WithDelay(time.Minute))
		s, _ := q.Stats(context.Background())
		if s.Ready != 1 || s.Delayed != 2 {
			t.Errorf("stats %+v: want 1 ready, 2 delayed", s)
		}
		time.Sleep(time.Minute) // c's delay passes; it still waits for its key
		s, _ = q.Stats(context.Background())
		if s.Ready != 2 || s.Delayed != 1 {
			t.Errorf("after 1m, stats %+v: want 2 ready, 1 delayed", s)
		}
		c, _ := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error { return nil }, Workers(1))
		time.Sleep(2 * time.Hour)
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, _ = q.Stats(context.Background())
		if s.Ready != 0 || s.Delayed != 0 || s.Acked != 3 {
			t.Errorf("after draining, stats %+v: want 3 acked, nothing left", s)
		}
	})
}

// failOnce is a backend whose first Receive and first Ack fail (a broker
// blip).
type failOnce struct {
	Backend
	recvFailed, ackFailed *atomic.Bool
}

var errBlip = errors.New("broker unreachable")

func (b failOnce) Receive(ctx context.Context, lease time.Duration, d *Delivery) error {
	if b.recvFailed.CompareAndSwap(false, true) {
		return errBlip
	}
	return b.Backend.Receive(ctx, lease, d)
}

func (b failOnce) Ack(ctx context.Context, d *Delivery) error {
	if b.ackFailed.CompareAndSwap(false, true) {
		return errBlip
	}
	return b.Backend.Ack(ctx, d)
}

// Backend failures outside Close used to go unseen: a failed receive was
// retried, a failed ack left the job to be redelivered, and nothing counted
// either. Stats.BackendErrors counts them; the job is handled again after
// its lease and then acked.
func TestBackendErrorsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := failOnce{NewMemory(), new(atomic.Bool), new(atomic.Bool)}
		q, _ := New[string](WithBackend(b))
		var handled atomic.Int32
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			handled.Add(1)
			return nil
		}, Workers(1), Lease(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		enqueueOK(t, q, "x")
		time.Sleep(time.Minute) // virtual: the failed ack's lease (1.5s) ends, the job comes back
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, err := q.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s.BackendErrors != 2 || handled.Load() != 2 || s.Acked != 1 || s.Ready+s.InFlight+s.Delayed != 0 {
			t.Errorf("backend errors %d, handled %d times, stats %+v; want 2 errors, handled twice, acked once, nothing left",
				s.BackendErrors, handled.Load(), s)
		}
	})
}
