package promcorral_test

import (
	"context"
	"testing"

	"github.com/corral-go/corral/promcorral"
	"github.com/corral-go/corral/queue"
)

// healthQueue answers Stats with its Health.
type healthQueue struct{ h queue.Health }

func (q healthQueue) Stats(context.Context) (queue.Stats, error) {
	return queue.Stats{Health: q.h}, nil
}

// The backend's counts in a queue's Health are exported as counters: its reconnections and
// the losses of its stored jobs that it found.
func TestQueueBackendCounts(t *testing.T) {
	col := promcorral.New(promcorral.WithQueue("mail", healthQueue{queue.Health{Reachable: true, Reconnects: 3, Losses: 2}}))
	compare(t, col, `
# HELP corral_queue_backend_reconnects_total Times the backend re-established its connection to the broker (0 for a backend that keeps none).
# TYPE corral_queue_backend_reconnects_total counter
corral_queue_backend_reconnects_total{queue="mail"} 3
# HELP corral_queue_backend_losses_total Times the backend found that the broker had lost the queue's stored jobs, dead letters and leases (0 for a backend that cannot tell): each means jobs lost.
# TYPE corral_queue_backend_losses_total counter
corral_queue_backend_losses_total{queue="mail"} 2
`, "corral_queue_backend_reconnects_total", "corral_queue_backend_losses_total")
}
