package memory_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// The zero Backend panics before Open, saying what to use.
func TestZeroBackendPanicsBeforeOpen(t *testing.T) {
	const want = "memory: zero Backend used before Open: use memory.New, or give it to queue.New"
	wantPanic := func(f func()) {
		t.Helper()
		defer func() {
			t.Helper()
			if v := recover(); v != want {
				t.Errorf("recovered %#v; want a panic with %q", v, want)
			}
		}()
		f()
	}
	ctx := context.Background()
	var m memory.Backend
	wantPanic(func() { _, _ = m.Enqueue(ctx, driver.Message{ID: "x"}) })
	wantPanic(func() { _ = m.Receive(ctx, time.Second, &driver.Delivery{}) })
}

// The zero Backend works once a queue opens it.
func TestZeroBackendWorksOnceOpened(t *testing.T) {
	bg := context.Background()
	q, err := queue.New[string](bg, queue.WithBackend(&memory.Backend{}))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	c, err := q.Consume(bg, func(_ context.Context, j queue.Job[string]) error { got <- j.Payload; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(bg, "hello"); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != "hello" {
		t.Errorf("handled %q, want hello", p)
	}
	if _, err := c.Drain(bg); err != nil {
		t.Errorf("Drain: %v", err)
	}
	if s, _ := q.Stats(bg); s.Acked != 1 || s.Ready+s.InFlight+s.Delayed != 0 {
		t.Errorf("stats %+v: want the job acked, nothing stored", s)
	}
	if err := q.Close(bg); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// countingAcks embeds the in-memory backend and overrides Ack: its promoted
// InProcess methods are not its own (Self is the embedded backend), so the
// queue must call its Ack for every job, never the promoted AckNext.
type countingAcks struct {
	*memory.Backend
	acks *atomic.Int64
}

func (b countingAcks) Ack(ctx context.Context, d *driver.Delivery) error {
	b.acks.Add(1)
	return b.Backend.Ack(ctx, d)
}

// A wrapper that overrides a Backend method of an embedded InProcess
// backend is never bypassed by the fast paths.
func TestWrapperOverridesAreNotBypassed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var acks atomic.Int64
		q, err := queue.New[int](ctx, queue.WithBackend(countingAcks{memory.New(), &acks}))
		if err != nil {
			t.Fatal(err)
		}
		const n = 5
		for i := range n {
			if _, err := q.Enqueue(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		var handled atomic.Int64
		c, err := q.Consume(ctx, func(context.Context, queue.Job[int]) error { handled.Add(1); return nil }, queue.WithWorkers(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := q.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if handled.Load() != n || acks.Load() != n {
			t.Fatalf("handled %d jobs, the wrapper's Ack saw %d; want %d and %d", handled.Load(), acks.Load(), n, n)
		}
	})
}

// A generated ID skips the backend's duplicate lookup (no job can have it
// yet), but it is remembered like any other: enqueueing it again, as a
// producer retrying with the ID it was given would, is a duplicate while
// the job is stored and, with a horizon, until the horizon passes; the
// horizon is still pruned when every ID is generated.
func TestGeneratedIDsDeduplicated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		q, err := queue.New[int](context.Background(), queue.WithBackend(m), queue.WithDedupHorizon(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		id, err := q.Enqueue(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Enqueue(ctx, 2, queue.WithID(id)); !errors.Is(err, queue.ErrDuplicate) {
			t.Fatalf("re-enqueue of a stored generated ID: err %v, want ErrDuplicate", err)
		}
		var d driver.Delivery
		if err := m.Receive(ctx, time.Minute, &d); err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(ctx, &d); err != nil {
			t.Fatal(err)
		}
		time.Sleep(59 * time.Second)
		if _, err := q.Enqueue(ctx, 3, queue.WithID(id)); !errors.Is(err, queue.ErrDuplicate) {
			t.Fatalf("re-enqueue of an acked generated ID within the horizon: err %v, want ErrDuplicate", err)
		}
		for range 10 {
			time.Sleep(time.Second)
			if _, err := q.Enqueue(ctx, 4); err != nil {
				t.Fatal(err)
			}
		}
		seen := memory.SeenIDs(m)
		if seen != 10 { // the ten new ones; the first, 69 s old, was pruned by their enqueues
			t.Fatalf("the horizon remembers %d IDs, want 10", seen)
		}
		if _, err := q.Enqueue(ctx, 5, queue.WithID(id)); err != nil {
			t.Fatalf("re-enqueue after the horizon: %v", err)
		}
	})
}
