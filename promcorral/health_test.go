package promcorral_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/promcorral"
	"github.com/corral-go/corral/queue"
)

// healthQueue answers Stats with Acked and Health as set, and with err if set, as
// queue.Queue's Stats does: the counters and Health all the same.
type healthQueue struct {
	mu  sync.Mutex
	s   queue.Stats
	err error
}

func (q *healthQueue) Stats(context.Context) (queue.Stats, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.s, q.err
}

func (q *healthQueue) set(acked uint64, h queue.Health, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.s, q.err = queue.Stats{Acked: acked, Health: h}, err
}

// The backend's counts in a queue's Health are exported as counters (its reconnections and
// the losses of its stored jobs that it found), and a read that fails still gives its Health:
// the queue shows unreachable, with the counts as of the failed read, while the other values
// stay those of the last read that succeeded.
func TestQueueHealthOfEveryRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &healthQueue{}
		q.set(5, queue.Health{Reachable: true, Reconnects: 1}, nil)
		col := promcorral.New(promcorral.WithQueue("mail", q), promcorral.WithStatsInterval(10*time.Second))
		names := []string{"corral_queue_reachable", "corral_queue_backend_reconnects_total",
			"corral_queue_backend_losses_total", "corral_queue_jobs_acked_total", "corral_queue_stats_errors_total"}
		want := func(reachable, reconnects, losses, acked, errs string) string {
			return `
# HELP corral_queue_reachable 1 if the backend was reachable at the last read, else 0.
# TYPE corral_queue_reachable gauge
corral_queue_reachable{queue="mail"} ` + reachable + `
# HELP corral_queue_backend_reconnects_total Times the backend re-established its connection to the broker (0 for a backend that keeps none).
# TYPE corral_queue_backend_reconnects_total counter
corral_queue_backend_reconnects_total{queue="mail"} ` + reconnects + `
# HELP corral_queue_backend_losses_total Times this process's backend found that the broker had lost what it stored for the queue (its jobs, if it had any, dead letters and leases); 0 for a backend that cannot tell.
# TYPE corral_queue_backend_losses_total counter
corral_queue_backend_losses_total{queue="mail"} ` + losses + `
# HELP corral_queue_jobs_acked_total Jobs this process handled successfully.
# TYPE corral_queue_jobs_acked_total counter
corral_queue_jobs_acked_total{queue="mail"} ` + acked + `
# HELP corral_queue_stats_errors_total Reads of the queue's Stats by this collector that failed or timed out.
# TYPE corral_queue_stats_errors_total counter
corral_queue_stats_errors_total{queue="mail"} ` + errs + `
`
		}
		compare(t, col, want("1", "1", "0", "5", "0"), names...)
		q.set(0, queue.Health{Reachable: false, Reconnects: 3, Losses: 2}, errors.New("broker gone"))
		time.Sleep(10 * time.Second)
		compare(t, col, want("0", "3", "2", "5", "1"), names...)
		// A Stats that returns no Health with its error leaves the counts where they were.
		q.set(0, queue.Health{}, errors.New("broker gone"))
		time.Sleep(10 * time.Second)
		compare(t, col, want("0", "3", "2", "5", "2"), names...)
		q.set(6, queue.Health{Reachable: true, Reconnects: 4, Losses: 2}, nil)
		time.Sleep(10 * time.Second)
		compare(t, col, want("1", "4", "2", "6", "2"), names...)
	})
}
