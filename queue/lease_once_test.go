package queue

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// A lease shorter than a millisecond: renewals used to tick at most every
// millisecond, so the backend lease (1.5 times the lease) ended between two
// ticks and the job went to a second worker while its handler still ran.
func TestTinyLeaseNeverInFlightTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string](context.Background())
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
		}, WithWorkers(2), WithLease(100*time.Microsecond))
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
type lostLease struct{ driver.Backend }

func (lostLease) Extend(context.Context, *driver.Delivery, time.Duration) error { return ErrLeaseLost }

// When the backend refuses to renew a lease, the handler's ctx is cancelled
// with cause ErrLeaseLost at the first renewal (half a lease in).
func TestLeaseLostCancelsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string](context.Background(), WithBackend(lostLease{memory.New()}))
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
		}, WithWorkers(1), WithLease(time.Hour))
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

// consumeAll runs h on the jobs of payloads, enqueued into q, with a
// consumer of opts: in a testing/synctest bubble, it returns once the
// workers have settled them and the consumer is closed.
func consumeAll(t *testing.T, q *Queue[string], h Handler[string], opts []ConsumerOption, payloads ...string) {
	t.Helper()
	c, err := q.Consume(context.Background(), h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		enqueueOK(t, q, p)
	}
	synctest.Wait()
	if _, err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
