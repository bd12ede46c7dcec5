package queue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// lostReply stands in for a broker backend whose first answer is lost: it stores the first
// job it is given, and then reports that the broker did not answer in time.
type lostReply struct {
	driver.Backend
	lost bool
}

func (b *lostReply) Enqueue(ctx context.Context, m driver.Message) (driver.EnqueueResult, error) {
	res, err := b.Backend.Enqueue(ctx, m)
	if err == nil && !b.lost {
		b.lost = true
		return res, fmt.Errorf("broker: no reply within the call timeout: %w", queue.ErrUnavailable)
	}
	return res, err
}

// An Enqueue that fails with ErrUnavailable may have stored the job: enqueue it again with
// the same ID, and read ErrDuplicate as "it was stored".
func ExampleQueue_Enqueue_unavailable() {
	q, err := queue.New[string](context.Background(), queue.WithBackend(&lostReply{Backend: memory.New()}))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for try := 1; try <= 5; try++ {
		_, err := q.Enqueue(ctx, "send invoice 42", queue.WithID("invoice-42"))
		switch {
		case err == nil:
			fmt.Println("stored")
		case errors.Is(err, queue.ErrDuplicate) && try > 1:
			fmt.Println("stored by an earlier try")
		case errors.Is(err, queue.ErrUnavailable):
			fmt.Println("broker unavailable; healthy:", q.Health().Reachable)
			continue // in production: after a backoff
		default:
			fmt.Println("failed:", err)
		}
		break
	}
	fmt.Println("healthy:", q.Health().Reachable)
	// Output:
	// broker unavailable; healthy: false
	// stored by an earlier try
	// healthy: true
}
