package queue

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
	"github.com/corral-go/corral/retry"
)

// A handler calling runtime.Goexit (t.FailNow in a handler) fails its job
// like a panic, and its worker is replaced: the consumer keeps its capacity.
func TestConsumerGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dead := make(chan Event, 10)
		acked := make(chan Event, 10)
		q, err := New[int](context.Background(), WithHooks(Hooks{
			OnDead:    func(_ context.Context, e Event) { dead <- e },
			OnSuccess: func(_ context.Context, e Event) { acked <- e },
		}))
		if err != nil {
			t.Fatal(err)
		}
		var running, peak atomic.Int32
		c, err := q.Consume(ctx, func(ctx context.Context, j Job[int]) error {
			if j.Payload < 0 {
				runtime.Goexit()
			}
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Second)
			running.Add(-1)
			return nil
		}, WithWorkers(2))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []int{-1, -2, 1, 2, 3, 4} {
			if _, err := q.Enqueue(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			e := <-dead
			if e.Reason != ReasonPanic || !errors.Is(e.Err, ErrGoexit) {
				t.Errorf("dead event %+v: want reason panic, errGoexit", e)
			}
		}
		for range 4 {
			<-acked
		}
		if p := peak.Load(); p != 2 {
			t.Errorf("peak concurrency after Goexits %d, want 2", p)
		}
		r, err := c.Close(ctx)
		if err != nil || r != (Report{}) {
			t.Errorf("Close = %+v, %v", r, err)
		}
		for dl := range q.DeadLetters(ctx) {
			if !strings.Contains(dl.History[0].Error, "Goexit") {
				t.Errorf("history %+v", dl.History)
			}
		}
	})
}

// Stats.DeadLetteredTotal sums the dead letters of every reason.
func TestStatsDeadLetteredTotal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dead := make(chan Event, 3)
		q, _ := New[int](context.Background(), WithHooks(Hooks{OnDead: func(_ context.Context, e Event) { dead <- e }}))
		c, _ := q.Consume(ctx, func(ctx context.Context, j Job[int]) error {
			switch j.Payload {
			case 1:
				return retry.Permanent(errors.New("bad input"))
			case 2:
				panic("poison")
			case 3:
				return errors.New("flaky")
			}
			return nil
		}, WithWorkers(1), WithMaxAttempts(2), WithBackoff(backoff.Constant(time.Second)))
		for p := range 5 {
			if _, err := q.Enqueue(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			<-dead
		}
		if _, err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
		s, _ := q.Stats(ctx)
		if got := s.DeadLetteredTotal(); got != 3 || s.Dead != 3 || s.Acked != 2 {
			t.Errorf("stats %+v, DeadLetteredTotal %d: want 3 dead, 2 acked", s, got)
		}
	})
}

// nilErr's Error panics on a nil *nilErr: a handler returning a typed nil
// error returns a non-nil error whose Error method panics.
type nilErr struct{ msg string }

func (e *nilErr) Error() string { return e.msg }

// A handler error whose methods panic (a typed nil) makes the job poison:
// it is dead-lettered with ReasonPanic, not left unsettled (to come back
// when its lease ends). Job b is taken with the ack of a. The worker goes
// on with c.
func TestHandlerErrorThatPanicsIsPoison(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string](context.Background())
		consumeAll(t, q, func(ctx context.Context, j Job[string]) error {
			if j.Payload == "b" {
				var e *nilErr
				return e
			}
			return nil
		}, []ConsumerOption{WithWorkers(1)}, "a", "b", "c")
		s, _ := q.Stats(context.Background())
		if s.Acked != 2 || s.InFlight != 0 || s.Dead != 1 || s.DeadLettered[ReasonPanic] != 1 {
			t.Fatalf("stats %+v: want a and c acked, b dead (panic), nothing in flight", s)
		}
		for dl := range q.DeadLetters(context.Background()) {
			if dl.Job.Payload != "b" || len(dl.History) != 1 || !strings.Contains(dl.History[0].Error, "nil pointer") {
				t.Errorf("dead letter %+v: want b, one attempt failed with the nil dereference", dl)
			}
		}
	})
}

// panickyReceive is a backend whose Receive panics, up to 100 times.
type panickyReceive struct {
	*memory.Backend
	panics atomic.Int32
}

func (b *panickyReceive) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	if b.panics.Add(1) <= 100 {
		panic("broken backend")
	}
	return b.Backend.Receive(ctx, lease, d) // only a loop that retried gets here
}

// A panic in a Backend method on a worker (not in the handler, a hook or the
// codec) stops the consumer's intake instead of being retried in a loop, and
// Close panics with it, once.
func TestBackendPanicStopsIntakeAndSurfacesInClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &panickyReceive{Backend: memory.New()}
		q, err := New[string](context.Background(), WithBackend(b))
		if err != nil {
			t.Fatal(err)
		}
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error { return nil }, WithWorkers(1))
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := b.panics.Load(); n != 1 {
			t.Errorf("Receive called %d times, want 1: the worker loop went on after the panic", n)
		}
		var p any
		func() {
			defer func() { p = recover() }()
			_, _ = c.Close(context.Background())
		}()
		if pe, ok := p.(*PanicError); !ok || pe.Where != "Backend.Receive" || pe.Value != "broken backend" || !bytes.Contains(pe.Stack, []byte("panickyReceive")) {
			t.Fatalf("Close panicked with %#v; want the backend's panic, with its stack", p)
		}
		if _, err := c.Close(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("second Close: %v, want ErrClosed", err)
		}
	})
}
