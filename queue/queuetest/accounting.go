package queuetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

func testAckOnce(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	got := make(chan queue.Job[string], 10)
	ids := []string{e.enqueue(q, "a"), e.enqueue(q, "b", queue.WithID("id-b")), e.enqueue(q, "c")}
	if ids[1] != "id-b" {
		e.Errorf("Enqueue returned ID %q, want id-b", ids[1])
	}
	if ids[0] == "" || ids[0] == ids[2] {
		e.Errorf("generated IDs %q and %q: want distinct and non-empty", ids[0], ids[2])
	}
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		got <- j
		return nil
	})
	want := map[string]string{ids[0]: "a", ids[1]: "b", ids[2]: "c"}
	for range 3 {
		j := recv(e, got, "job")
		if want[j.ID] != j.Payload || j.Attempt != 1 || j.EnqueuedAt.IsZero() {
			e.Errorf("job %+v: want payload %q, attempt 1, enqueue time", j, want[j.ID])
		}
		delete(want, j.ID)
	}
	for range 3 {
		recv(e, ev.acked, "ack")
	}
	quiet(e, got, 5*e.unit, "redelivery")
	s := stats(e, q)
	if s.Enqueued != 3 || s.Acked != 3 || s.Ready+s.InFlight+s.Delayed+s.Dead != 0 {
		e.Errorf("stats %+v: want 3 enqueued and acked, nothing stored", s)
	}
}

// testAccounting: every accepted job ends acked or dead-lettered exactly
// once, and the counters add up.
func testAccounting(e *env) {
	var mu sync.Mutex
	final := map[string]int{}
	note := func(x queue.Event) { mu.Lock(); final[x.ID]++; mu.Unlock() }
	done := make(chan struct{}, 1000)
	q := e.newQueue(queue.WithHooks(queue.Hooks{
		OnSuccess: func(_ context.Context, x queue.Event) { note(x); done <- struct{}{} },
		OnDead:    func(_ context.Context, x queue.Event) { note(x); done <- struct{}{} },
	}))
	const n = 60
	for i := range n {
		e.enqueue(q, fmt.Sprint(i), queue.WithKey(fmt.Sprint(i%4)))
	}
	e.consume(q, mixedOutcomes, queue.WithWorkers(3), queue.WithMaxAttempts(3))
	for range n {
		recv(e, done, "settled job")
	}
	s := stats(e, q)
	dead := s.DeadLetteredTotal()
	stored := s.Ready + s.InFlight + s.Delayed
	if s.Enqueued != n || s.Acked+dead+uint64(stored) != s.Enqueued || s.Acked != 24 || dead != 36 || s.Dead != 36 {
		e.Errorf("stats %+v: want enqueued = acked(24) + dead(36) + stored(0)", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(final) != n {
		e.Errorf("%d jobs settled, want %d", len(final), n)
	}
	for id, k := range final {
		if k != 1 {
			e.Errorf("job %s settled %d times", id, k)
		}
	}
}

// mixedOutcomes is testAccounting's handler: the job with payload i succeeds (i%5 == 0),
// succeeds on its second attempt (1), fails every attempt (2), fails permanently (3) or
// panics (4).
func mixedOutcomes(ctx context.Context, j queue.Job[string]) error {
	var i int
	fmt.Sscan(j.Payload, &i)
	switch i % 5 {
	case 0:
		return nil
	case 1:
		if j.Attempt < 2 {
			return errBoom
		}
		return nil
	case 2:
		return errBoom // exhausts attempts
	case 3:
		return retry.Permanent(errBoom)
	default:
		panic(i)
	}
}

func testStats(e *env) {
	q := e.newQueue()
	e.enqueue(q, "old")
	time.Sleep(3 * e.unit)
	e.enqueue(q, "delayed", queue.WithDelay(10*e.unit))
	s := stats(e, q)
	if s.Ready != 1 || s.Delayed != 1 || s.InFlight != 0 || s.Enqueued != 2 {
		e.Errorf("stats %+v: want 1 ready, 1 delayed", s)
	}
	e.elapsed("lag", s.Lag, 3*e.unit)
	hold := make(chan struct{})
	started := make(chan struct{}, 1)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		started <- struct{}{}
		<-hold
		return nil
	}, queue.WithWorkers(1))
	recv(e, started, "start")
	if s := stats(e, q); s.InFlight != 1 || s.Ready != 0 || s.Delayed != 1 {
		e.Errorf("stats %+v: want 1 in flight, 1 delayed", s)
	}
	close(hold)
}
