package redis_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// replicationJobs is the jobs enqueued per case.
const replicationJobs = 300

// failover enqueues replicationJobs jobs on a master with opts, the replica paused (SIGSTOP) from
// the start if pause; then the master is SIGKILLed, the replica continued and promoted, (or, if
// restartReplica, SIGKILLed and restarted on its own store: a replica that had not applied them),
// and failover returns the jobs acknowledged and the jobs the promoted replica holds.
func failover(t *testing.T, pause, restartReplica bool, opts ...redis.Option) (acked, kept int) {
	master := redistest.Start(t, "always")
	replica := redistest.StartReplica(t, master)
	name := queueName(t)
	ctx := context.Background()
	b := redis.New(newClient(t, master.Addr()), name, opts...)
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatalf("Open: %v", err)
	}
	if pause {
		replica.Pause(t)
	}
	for i := range replicationJobs {
		_, err := b.Enqueue(ctx, driver.Message{ID: strconv.Itoa(i), Body: []byte("x")})
		switch {
		case err == nil:
			acked++
		case errors.Is(err, queue.ErrUnavailable):
		default:
			t.Fatalf("Enqueue %d: %v", i, err)
		}
		if pause && i == 2 && len(opts) > 0 {
			break // with WithReplicas each enqueue waits out its timeout: three show it
		}
	}
	master.Kill(t)
	switch {
	case restartReplica:
		replica.Restart(t) // what it had not applied (in its socket's buffer) is gone
	case pause:
		replica.Continue(t)
	}
	replica.Promote(t)
	// The queue's stored jobs, read from its counter: a Backend with the queue's replica count
	// (a shared setting) could not open on a master left with no replica.
	n, err := newClient(t, replica.Addr()).Get(ctx, "corral:{"+name+"}:n").Int()
	if err != nil && !errors.Is(err, goredis.Nil) {
		t.Fatalf("stored jobs on the promoted replica: %v", err)
	}
	return acked, n
}

// TestFailoverWithReplicas measures what a failover to a replica loses: with WithReplicas(1),
// nothing acknowledged (every enqueue was confirmed by the replica before it returned), and
// with the replica stalled every enqueue fails with ErrUnavailable within the wait instead
// of being acknowledged; without it, the enqueues acknowledged while the replica was stalled
// are lost unless they reached the replica before the master died: on loopback they sit in
// the stalled replica's socket buffer, which it reads when continued (none lost), and a
// replica that dies before applying them loses them all.
func TestFailoverWithReplicas(t *testing.T) {
	t.Run("WAIT", func(t *testing.T) {
		acked, kept := failover(t, false, false, redis.WithReplicas(1, 2*time.Second))
		t.Logf("FAULTS failover with WithReplicas(1): %d enqueues acknowledged, %d on the promoted replica", acked, kept)
		if acked != replicationJobs || kept != acked {
			t.Errorf("acknowledged %d of %d, promoted replica holds %d: want all", acked, replicationJobs, kept)
		}
	})
	t.Run("WAIT/replica-stalled", func(t *testing.T) {
		acked, kept := failover(t, true, false, redis.WithReplicas(1, time.Second))
		t.Logf("FAULTS failover with WithReplicas(1), replica stalled: %d of 3 enqueues acknowledged, %d on the promoted replica", acked, kept)
		if acked != 0 {
			t.Errorf("%d enqueues acknowledged with the replica stalled, want 0 (ErrUnavailable)", acked)
		}
	})
	t.Run("async", func(t *testing.T) {
		acked, kept := failover(t, true, false)
		t.Logf("FAULTS failover without WAIT, replica stalled then continued: %d enqueues acknowledged, %d on the promoted replica (lost %d)", acked, kept, acked-kept)
		if acked != replicationJobs || kept > acked {
			t.Errorf("acknowledged %d of %d, promoted replica holds %d", acked, replicationJobs, kept)
		}
	})
	t.Run("async/replica-restarted", func(t *testing.T) {
		acked, kept := failover(t, true, true)
		t.Logf("FAULTS failover without WAIT, replica stalled then restarted: %d enqueues acknowledged, %d on the promoted replica (lost %d)", acked, kept, acked-kept)
		if acked != replicationJobs || kept != 0 {
			t.Errorf("acknowledged %d of %d, promoted replica holds %d: want none, the replica having applied none", acked, replicationJobs, kept)
		}
	})
}
