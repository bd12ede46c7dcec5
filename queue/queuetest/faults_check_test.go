package queuetest

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// electing is a backend whose DeadLetters and Stats answer ErrUnavailable the first times they
// are called, as a cluster does while its streams elect leaders again after a pause.
type electing struct {
	driver.Backend
	deadFails, statsFails atomic.Int32
}

func (b *electing) DeadLetters(ctx context.Context) iter.Seq2[driver.DeadMessage, error] {
	if b.deadFails.Add(-1) >= 0 {
		return func(yield func(driver.DeadMessage, error) bool) {
			yield(driver.DeadMessage{}, fmt.Errorf("test: temporarily unavailable: %w", queue.ErrUnavailable))
		}
	}
	return b.Backend.DeadLetters(ctx)
}

func (b *electing) Stats(ctx context.Context) (driver.Stats, error) {
	if b.statsFails.Add(-1) >= 0 {
		return driver.Stats{}, fmt.Errorf("test: temporarily unavailable: %w", queue.ErrUnavailable)
	}
	return b.Backend.Stats(ctx)
}

// The fault checks list the dead letters and the stats again while the backend answers
// ErrUnavailable within the recovery bound, as the producer retries its enqueues, instead of
// failing the scenario on the first answer.
func TestFaultChecksRetryUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &electing{Backend: memory.New()}
		b.deadFails.Store(3)
		b.statsFails.Store(3)
		q, err := queue.New[string](context.Background(), queue.WithBackend(b))
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close(context.Background())
		r := &faultRun{t: t, f: Faults{CallTimeout: time.Second, Election: time.Second}, q: q}
		ctx := context.Background()
		if n := r.checkDeadLetters(ctx, jobReports{}, map[string]bool{}, 0); n != 0 {
			t.Errorf("%d dead letters, want 0", n)
		}
		r.checkNothingStored(ctx)
		if d, s := b.deadFails.Load(), b.statsFails.Load(); d != -1 || s != -1 {
			t.Errorf("DeadLetters and Stats left %d and %d failures unasked, want each asked once more after its 3", d+1, s+1)
		}
	})
}
