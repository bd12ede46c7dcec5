package queue

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A handler calling runtime.Goexit (t.FailNow in a handler) fails its job
// like a panic, and its worker is replaced: the consumer keeps its capacity.
func TestConsumerGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dead := make(chan Event, 10)
		acked := make(chan Event, 10)
		q, err := New[int](WithHooks(Hooks{
			OnDead:    func(e Event) { dead <- e },
			OnSuccess: func(e Event) { acked <- e },
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
		}, Workers(2))
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
			if e.Reason != ReasonPanic || !errors.Is(e.Err, errGoexit) {
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

// A handler that ignores its cancelled context is abandoned by Close after
// the grace period; its job stays leased and is redelivered after the lease.
func TestConsumerAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		q, _ := New[string]()
		release := make(chan struct{})
		started := make(chan struct{})
		c, _ := q.Consume(ctx, func(ctx context.Context, j Job[string]) error {
			close(started)
			<-release // ignores ctx
			return nil
		}, Workers(1), Lease(time.Minute), ShutdownGrace(2*time.Second))
		if _, err := q.Enqueue(ctx, "stubborn"); err != nil {
			t.Fatal(err)
		}
		<-started
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		start := time.Now()
		r, err := c.Close(cctx)
		if !errors.Is(err, context.DeadlineExceeded) || r != (Report{Abandoned: 1}) {
			t.Errorf("Close = %+v, %v; want 1 abandoned, deadline exceeded", r, err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("Close took %v, want 3s (deadline + grace)", got)
		}
		s, _ := q.Stats(ctx)
		if s.InFlight != 1 {
			t.Errorf("stats %+v: want the abandoned job in flight", s)
		}
		// The backend lease (1.5 leases, no longer renewed) expires: the
		// job is ready again.
		time.Sleep(90 * time.Second)
		if s, _ := q.Stats(ctx); s.Ready != 1 || s.InFlight != 0 {
			t.Errorf("stats after the lease %+v: want the job ready", s)
		}
		close(release)
		// The abandoned handler returns, its worker exits, and the pool's
		// idle worker goroutine leaves after the pool's idle timeout.
		time.Sleep(2 * time.Second)
	})
}

func TestConsumerOptionsValidated(t *testing.T) {
	q, _ := New[int]()
	h := func(context.Context, Job[int]) error { return nil }
	for _, o := range []ConsumerOption{Workers(0), Lease(0), MaxAttempts(0), ShutdownGrace(-1)} {
		if c, err := q.Consume(context.Background(), h, o); err == nil {
			_, _ = c.Close(context.Background())
			t.Errorf("Consume accepted an invalid option")
		}
	}
}

func TestGeneratedIDs(t *testing.T) {
	q, _ := New[int]()
	seen := map[string]bool{}
	for range 3*idChunk + 5 {
		id := q.newID()
		if len(id) != idLen || strings.Trim(id, "0123456789abcdef") != "" || seen[id] {
			t.Fatalf("generated ID %q: want %d hex digits, unique", id, idLen)
		}
		seen[id] = true
	}
	q2, _ := New[int]()
	if id := q2.newID(); seen[id] {
		t.Fatalf("two queues generated the same ID %q", id)
	}
}
