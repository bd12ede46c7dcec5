package queue

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// receiveStarting is a backend with ReceiveStart (Receive, then Start), counting the calls of
// Start and of the ReceiveStart calls that received a job. Embedding the interface hides memory's InProcess.
type receiveStarting struct {
	driver.Backend
	starts, receiveStarts *atomic.Int64
}

func newReceiveStarting() receiveStarting {
	return receiveStarting{memory.New(), new(atomic.Int64), new(atomic.Int64)}
}

func (b receiveStarting) Start(ctx context.Context, d *driver.Delivery) error {
	b.starts.Add(1)
	return b.Backend.Start(ctx, d)
}

func (b receiveStarting) ReceiveStart(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	if err := b.Backend.Receive(ctx, lease, d); err != nil {
		return err
	}
	b.receiveStarts.Add(1)
	return b.Backend.Start(ctx, d)
}

// A consumer with nothing to wait for between a job and its handler receives with ReceiveStart
// and calls no Start; one with a Share (or a rate limit) waits there, and calls Receive and Start.
func TestReceiveStartReplacesStart(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		opts                 []ConsumerOption
		starts, receiveStart int64
	}{
		{"plain", []ConsumerOption{WithWorkers(2)}, 0, 3},
		{"share", []ConsumerOption{WithWorkers(2), WithShare(NewShare(2, Strict), "a", 1)}, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newReceiveStarting()
				q, err := New[string](context.Background(), WithBackend(b))
				if err != nil {
					t.Fatal(err)
				}
				var handled atomic.Int64
				consumeAll(t, q, func(context.Context, Job[string]) error {
					handled.Add(1)
					return nil
				}, tc.opts, "a", "b", "c")
				if err := q.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				if handled.Load() != 3 || b.starts.Load() != tc.starts || b.receiveStarts.Load() != tc.receiveStart {
					t.Errorf("handled %d, Start called %d times, ReceiveStart received %d; want 3, %d, %d",
						handled.Load(), b.starts.Load(), b.receiveStarts.Load(), tc.starts, tc.receiveStart)
				}
			})
		})
	}
}
