package queuetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

// env is one subtest's world.
type env struct {
	*testing.T
	s       suite
	unit    time.Duration
	virtual bool
}

func (e *env) supports(p queue.Overflow) bool {
	return e.s.caps.Overflow == nil || slices.Contains(e.s.caps.Overflow, p)
}

func (e *env) skipUnless(p queue.Overflow) {
	if !e.supports(p) {
		e.Skipf("backend does not implement %v", p)
	}
}

// newQueue returns a queue of strings on a new backend.
func (e *env) newQueue(opts ...queue.Option) *queue.Queue[string] {
	e.Helper()
	q, err := queue.New[string](context.Background(), append([]queue.Option{queue.WithBackend(e.s.newBackend(e.T))}, opts...)...)
	if err != nil {
		e.Fatalf("queue.New: %v", err)
	}
	e.Cleanup(func() { _ = q.Close(context.Background()) })
	return q
}

// consume starts a consumer closed at the end of the test.
func (e *env) consume(q *queue.Queue[string], h queue.Handler[string], opts ...queue.ConsumerOption) *queue.Consumer[string] {
	e.Helper()
	base := []queue.ConsumerOption{queue.WithWorkers(4), queue.WithLease(100 * e.unit), queue.WithBackoff(backoff.Constant(e.unit))}
	c, err := q.Consume(context.Background(), h, append(base, opts...)...)
	if err != nil {
		e.Fatalf("Consume: %v", err)
	}
	e.Cleanup(func() { _, _ = c.Close(context.Background()) })
	return c
}

// timeout bounds every wait for an event.
func (e *env) timeout() time.Duration {
	if e.virtual {
		return time.Hour
	}
	return 200 * e.unit
}

// recv waits for a value on ch.
func recv[V any](e *env, ch <-chan V, what string) V {
	e.Helper()
	t := time.NewTimer(e.timeout())
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		e.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// quiet asserts nothing arrives on ch within d.
func quiet[V any](t testing.TB, ch <-chan V, d time.Duration, what string) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %s: %v", what, v)
	case <-timer.C:
	}
}

// events collects settled outcomes through hooks.
type events struct {
	acked chan queue.Event
	retry chan queue.Event
	dead  chan queue.Event
}

func newEvents() (*events, queue.Option) {
	ev := &events{
		acked: make(chan queue.Event, 1000),
		retry: make(chan queue.Event, 1000),
		dead:  make(chan queue.Event, 1000),
	}
	return ev, queue.WithHooks(queue.Hooks{
		OnSuccess: func(_ context.Context, x queue.Event) { ev.acked <- x },
		OnRetry:   func(_ context.Context, x queue.Event) { ev.retry <- x },
		OnDead:    func(_ context.Context, x queue.Event) { ev.dead <- x },
	})
}

func (e *env) enqueue(q *queue.Queue[string], payload string, opts ...queue.EnqueueOption) string {
	e.Helper()
	id, err := q.Enqueue(context.Background(), payload, opts...)
	if err != nil {
		e.Fatalf("Enqueue(%q): %v", payload, err)
	}
	return id
}

// elapsed asserts that got is want exactly (virtual time) or at least want
// (real time).
func (e *env) elapsed(what string, got, want time.Duration) {
	e.Helper()
	e.elapsedLate(what, got, want, 0)
}

// elapsedLate is elapsed for a time the contract lets come up to late after want: on the
// virtual clock it must fall in [want, want+late].
func (e *env) elapsedLate(what string, got, want, late time.Duration) {
	e.Helper()
	if e.virtual && (got < want || got > want+late) || !e.virtual && got < want {
		e.Errorf("%s after %v, want %v (up to %v later)", what, got, want, late)
	}
}

func deadLetters(e *env, q *queue.Queue[string]) []queue.DeadLetter[string] {
	e.Helper()
	var out []queue.DeadLetter[string]
	for dl, err := range q.DeadLetters(context.Background()) {
		if err != nil {
			e.Fatalf("DeadLetters: %v", err)
		}
		out = append(out, dl)
	}
	return out
}

func stats(e *env, q *queue.Queue[string]) queue.Stats {
	e.Helper()
	s, err := q.Stats(context.Background())
	if err != nil {
		e.Fatalf("Stats: %v", err)
	}
	return s
}

// receiversWait returns once the Receive calls started on other goroutines wait for a job:
// under synctest, once every other goroutine of the bubble is blocked; under real time, after
// a unit.
func (e *env) receiversWait() {
	if e.virtual {
		synctest.Wait()
		return
	}
	time.Sleep(e.unit) // no way to observe a broker's waiting receivers
}

// openBackend returns a new backend opened with cfg, driven directly (no
// Queue, no Consumer).
func (e *env) openBackend(cfg driver.Config) driver.Backend {
	e.Helper()
	b := e.s.newBackend(e.T)
	if err := b.Open(context.Background(), cfg); err != nil {
		e.Fatalf("Open: %v", err)
	}
	return b
}

var errBoom = errors.New("boom")
