package queuetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
)

// testOrderingKey: jobs with one key run one at a time in enqueue order, a
// failing job holding the key through its retries.
func testOrderingKey(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	var (
		mu      sync.Mutex
		order   []string
		running int
		overlap bool
	)
	for i := range 5 {
		e.enqueue(q, fmt.Sprintf("k%d", i), queue.WithKey("k"))
	}
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		mu.Lock()
		running++
		if running > 1 {
			overlap = true
		}
		order = append(order, fmt.Sprintf("%s#%d", j.Payload, j.Attempt))
		mu.Unlock()
		time.Sleep(e.unit / 10) // give a wrongly scheduled sibling time to overlap
		mu.Lock()
		running--
		mu.Unlock()
		if j.Payload == "k1" && j.Attempt < 3 {
			return errBoom
		}
		return nil
	}, queue.WithWorkers(4), queue.WithBackoff(backoff.Constant(2*e.unit)))
	for range 5 {
		recv(e, ev.acked, "ack")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"k0#1", "k1#1", "k1#2", "k1#3", "k2#1", "k3#1", "k4#1"}
	if !slices.Equal(order, want) {
		e.Errorf("handled %v, want %v", order, want)
	}
	if overlap {
		e.Errorf("two jobs with the same key ran at once")
	}
}

// testKeysParallel: different keys do not wait for each other.
func testKeysParallel(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	aStarted := make(chan struct{})
	bStarted := make(chan struct{})
	e.enqueue(q, "a", queue.WithKey("a"))
	e.enqueue(q, "b", queue.WithKey("b"))
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		mine, other := aStarted, bStarted
		if j.Payload == "b" {
			mine, other = bStarted, aStarted
		}
		close(mine)
		select { // each waits for the other: only parallel handling finishes
		case <-other:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}, queue.WithWorkers(2))
	recv(e, ev.acked, "ack")
	recv(e, ev.acked, "ack")
	if s := stats(e, q); s.Retried != 0 {
		e.Errorf("stats %+v: keys did not run in parallel", s)
	}
}
