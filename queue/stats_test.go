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

// A delayed job queued behind a busy ordering key counted as ready.
func TestStatsDelayedBehindKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string](context.Background())
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
		c, _ := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error { return nil }, WithWorkers(1))
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
	driver.Backend
	recvFailed, ackFailed *atomic.Bool
}

var errBlip = errors.New("broker unreachable")

func (b failOnce) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	if b.recvFailed.CompareAndSwap(false, true) {
		return errBlip
	}
	return b.Backend.Receive(ctx, lease, d)
}

func (b failOnce) Ack(ctx context.Context, d *driver.Delivery) error {
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
		b := failOnce{memory.New(), new(atomic.Bool), new(atomic.Bool)}
		q, _ := New[string](context.Background(), WithBackend(b))
		var handled atomic.Int32
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			handled.Add(1)
			return nil
		}, WithWorkers(1), WithLease(time.Second))
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
