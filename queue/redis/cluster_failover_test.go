package redis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// failoverJobs is the jobs enqueued per run of clusterFailover: CI's size, or the full one
// with CORRAL_FAULTS=full (as queuetest's fault suite).
func failoverJobs() int {
	if os.Getenv("CORRAL_FAULTS") == "full" {
		return 2000
	}
	return 300
}

// afterElectionBound bounds the time from the cluster naming a new master for the queue's
// slot to the first enqueue acknowledged after the kill: the client's reload of the slots and
// a call timeout or two. What comes before, the election, is Redis Cluster's (one candidate:
// StartReplicatedCluster lets only replica 0 stand, after CI saw two standing split the votes
// for two minutes), and a failed one is tried again four node timeouts later. The producer is
// only asked to recover once there is a master, and the election is bounded by electionLimit.
const afterElectionBound = 2*redistest.NodeTimeout + 2*faultCallTimeout

// electionLimit bounds the time from the kill to the cluster naming a new master: a test
// stops there, whatever the cause. (Elections measured 3.3-6.5s with the machine loaded; a
// replica that had not heard its master's config epoch was never elected before
// StartReplicatedCluster waited for every node to know them.)
const electionLimit = 2 * time.Minute

// failoverResult is what clusterFailover measured.
type failoverResult struct {
	jobs      int           // enqueued, each acknowledged (or ErrDuplicate on a retry: stored)
	beforeKil int           // of them, acknowledged by the master before it was killed
	retries   int           // Enqueue calls that failed with ErrUnavailable and were retried
	lost      []int         // acknowledged jobs that the cluster no longer holds
	recovery  time.Duration // from the kill to the first enqueue acknowledged after it
	election  time.Duration // from the kill to the cluster naming a new master (<= recovery)
}

// election watches a cluster fail over the master that served key when the watch began.
type election struct {
	cl     *redistest.Cluster
	key    string
	old    int           // the node serving key when the watch began
	killed time.Time     // when the watch began: the kill
	asked  time.Time     // the last time the cluster was asked
	after  time.Duration // from the kill to the cluster naming a new master; 0 until seen
}

// watchElection kills the master serving key and returns the watch of its failover.
func watchElection(t *testing.T, cl *redistest.Cluster, key string) *election {
	e := &election{cl: cl, key: key, old: cl.MasterOf(t, key)}
	cl.Nodes()[e.old].Kill(t)
	e.killed = time.Now()
	return e
}

// poll asks the cluster, at most every 250ms (a call that failed is the caller's cue), whether
// it names a master other than the killed one, and once it does records when in e.after. A nil
// watch (no kill yet) asks nothing.
func (e *election) poll(t *testing.T) {
	if e == nil || e.after > 0 || time.Since(e.asked) < 250*time.Millisecond {
		return
	}
	e.asked = time.Now()
	if e.cl.MasterOf(t, e.key) != e.old {
		e.after = time.Since(e.killed)
	}
}

// overdue reports whether the election took longer than electionLimit, or the queue longer
// than bound to recover from it; never before the kill (a nil watch).
func (e *election) overdue(bound time.Duration) bool {
	if e == nil {
		return false
	}
	since := time.Since(e.killed)
	return e.after == 0 && since > electionLimit || e.after > 0 && since-e.after > bound
}

// String says where the watch stands, for a test's failure.
func (e *election) String() string {
	if e == nil {
		return "before the kill"
	}
	return fmt.Sprintf("%v after the kill, new master after %v (0: not yet)",
		time.Since(e.killed).Round(time.Millisecond), e.after.Round(time.Millisecond))
}

// clusterFailover enqueues failoverJobs() jobs, one producer in order, on a cluster of three
// masters with two replicas each, through a backend made with opts; after a third of them the
// master serving the queue's slot is SIGKILLed, and the cluster fails it over by itself. An
// Enqueue failing with ErrUnavailable is retried with the same ID (ErrDuplicate then means it
// was stored). Then every job is received and acked, and the jobs acknowledged but not
// received are the lost ones; each job is received once at most.
func clusterFailover(t *testing.T, opts ...redis.Option) failoverResult {
	cl := redistest.StartReplicatedCluster(t, 3, 2, redistest.NodeTimeout)
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs(), PoolSize: 20, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: faultCallTimeout, WriteTimeout: faultCallTimeout})
	t.Cleanup(func() { _ = c.Close() })
	name := queueName(t)
	b := redis.New(c, name, append([]redis.Option{redis.WithCallTimeout(faultCallTimeout)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	r := failoverResult{jobs: failoverJobs()}
	var e *election
	for i := range r.jobs {
		if i == r.jobs/3 {
			r.beforeKil = i
			e = watchElection(t, cl, "corral:{"+name+"}:")
		}
		for retried := false; ; retried = true {
			_, err := b.Enqueue(ctx, driver.Message{ID: fmt.Sprintf("j-%05d", i), Body: []byte("x")})
			if err == nil || retried && errors.Is(err, queue.ErrDuplicate) {
				break
			}
			e.poll(t)
			if !errors.Is(err, queue.ErrUnavailable) || ctx.Err() != nil || e.overdue(3*afterElectionBound) {
				t.Fatalf("Enqueue %d: %v; want nil or ErrUnavailable, a new master within %v of the kill and an acknowledgment within %v of it (%v)\n%s",
					i, err, electionLimit, 3*afterElectionBound, e, cl.Describe())
			}
			r.retries++
			if os.Getenv("CORRAL_FAULTS_DEBUG") != "" {
				t.Logf("%v: enqueue %d: %v", e, i, err)
			}
			time.Sleep(20 * time.Millisecond) // a retry pace, not a synchronisation
		}
		if e != nil && r.recovery == 0 {
			r.recovery = time.Since(e.killed)
			r.election = e.after
			if r.election == 0 { // acknowledged before a retry saw the new master named
				r.election = r.recovery
			}
		}
	}
	seen := drainIDs(ctx, t, b, cl)
	for i := range r.jobs {
		switch seen[fmt.Sprintf("j-%05d", i)] {
		case 0:
			r.lost = append(r.lost, i)
		case 1:
		default:
			t.Errorf("job %d received %d times with no consumer running during the failover", i, seen[fmt.Sprintf("j-%05d", i)])
		}
	}
	if len(seen) > r.jobs {
		t.Errorf("received %d distinct jobs, %d enqueued", len(seen), r.jobs)
	}
	if r.recovery-r.election > afterElectionBound {
		t.Errorf("first enqueue acknowledged %v after the kill and %v after the cluster named a new master, beyond the bound %v",
			r.recovery, r.recovery-r.election, afterElectionBound)
	}
	return r
}

// drainIDs receives and acks every job of b, on cl, counting each ID's deliveries, until one
// Receive finds nothing within a second.
func drainIDs(ctx context.Context, t *testing.T, b *redis.Backend, cl *redistest.Cluster) map[string]int {
	t.Helper()
	if err := b.CheckLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for range 10 * failoverJobs() {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		var d driver.Delivery
		err := b.Receive(rctx, time.Minute, &d)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return seen
		}
		if err != nil {
			t.Fatalf("Receive: %v\n%s", err, cl.Describe())
		}
		seen[d.ID]++
		if err := b.Ack(ctx, &d); err != nil {
			t.Fatalf("Ack %s: %v", d.ID, err)
		}
	}
	t.Fatalf("more than %d deliveries", 10*failoverJobs())
	return nil
}

// TestClusterFailover measures what a master failover in a Redis Cluster loses, with and
// without WithReplicas: with WithReplicas(1, 1s) nothing acknowledged (every write was on a
// replica before it returned), and without it only writes acknowledged just before the kill,
// which the promoted replica had not received: the last ones (the replica holds a prefix of
// its master's writes), none of them on loopback in the runs measured (the replica gets each
// write as the client gets its answer). Either way the producer recovers by itself within
// afterElectionBound of the cluster naming a new master.
func TestClusterFailover(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []redis.Option
	}{
		{"WithReplicas", []redis.Option{redis.WithReplicas(1, faultReplicaWait)}},
		{"async", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := clusterFailover(t, tc.opts...)
			t.Logf("FAULTS cluster failover %s: %d jobs acknowledged (%d before the kill), %d lost %v, %d retries after ErrUnavailable, new master %v and first ack %v after the kill",
				tc.name, r.jobs, r.beforeKil, len(r.lost), r.lost, r.retries, r.election.Round(time.Millisecond), r.recovery.Round(time.Millisecond))
			if tc.opts != nil && len(r.lost) > 0 {
				t.Errorf("lost %d acknowledged jobs with WithReplicas: %v", len(r.lost), r.lost)
			}
			// Without WAIT: the lost jobs are the last ones acknowledged before the kill.
			for k, i := range r.lost {
				if i != r.beforeKil-len(r.lost)+k {
					t.Errorf("lost jobs %v: want the last %d acknowledged before the kill (%d to %d)",
						r.lost, len(r.lost), r.beforeKil-len(r.lost), r.beforeKil-1)
					break
				}
			}
		})
	}
}

// TestFailoverLastReplica: with one replica per master and WithReplicas(1), a failover leaves
// the new master no replica, and every write fails with ErrUnavailable until the old master
// is back as its replica (even a retried enqueue that finds its ID taken: that answer waits
// for a replica too); then writes are acknowledged again, a retry of each failed enqueue finds
// it kept (ErrDuplicate), and nothing is lost.
func TestFailoverLastReplica(t *testing.T) {
	cl := redistest.StartReplicatedCluster(t, 3, 1, redistest.NodeTimeout)
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs(), PoolSize: 20, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: faultCallTimeout, WriteTimeout: faultCallTimeout})
	t.Cleanup(func() { _ = c.Close() })
	name := queueName(t)
	b := redis.New(c, name, redis.WithCallTimeout(faultCallTimeout), redis.WithReplicas(1, 200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	enq := func(id string) error {
		_, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")})
		return err
	}
	if err := enq("before"); err != nil {
		t.Fatal(err)
	}
	e := watchElection(t, cl, "corral:{"+name+"}:")
	// Until the cluster fails over, writes fail (the master is gone); after, they fail too,
	// confirmed by no replica: the first one that reached the new master says so, within
	// afterElectionBound of the cluster naming it (the election is Redis's: electionLimit).
	var err error
	for {
		err = enq("after")
		if err != nil && strings.Contains(err.Error(), "0 of 1 replicas") {
			break
		}
		e.poll(t)
		if err == nil || !errors.Is(err, queue.ErrUnavailable) || e.overdue(afterElectionBound) {
			t.Fatalf("Enqueue after the kill: %v; want ErrUnavailable, then confirmed by 0 of 1 replicas within %v of the cluster naming a new master (%v)\n%s",
				err, afterElectionBound, e, cl.Describe())
		}
		time.Sleep(20 * time.Millisecond) // a retry pace
	}
	// A write that nothing changes waits for the replica too: the answer to a retry is no
	// surer than the write it checks.
	if err := enq("after"); !errors.Is(err, queue.ErrUnavailable) {
		t.Errorf("Enqueue of the unconfirmed job again with the new master alone: %v, want ErrUnavailable", err)
	}
	if err := enq("during"); !errors.Is(err, queue.ErrUnavailable) {
		t.Errorf("Enqueue with the new master alone: %v, want ErrUnavailable", err)
	}
	cl.Nodes()[e.old].Restart(t) // back as the new master's replica
	// An attempt that failed unconfirmed (ErrUnavailable) may have written the job, which its
	// retry then finds: ErrDuplicate after a failure means stored, as for any producer.
	for start, retried := time.Now(), false; ; retried = true {
		if err = enq("back"); err == nil || retried && errors.Is(err, queue.ErrDuplicate) {
			break
		}
		if !errors.Is(err, queue.ErrUnavailable) || time.Since(start) > time.Minute {
			t.Fatalf("Enqueue with the old master back as a replica: %v; want nil within a minute", err)
		}
		time.Sleep(50 * time.Millisecond) // a retry pace
	}
	for _, id := range []string{"after", "during"} {
		if err := enq(id); !errors.Is(err, queue.ErrDuplicate) {
			t.Errorf("Enqueue of %s again, a replica back: %v, want ErrDuplicate (it was written on the master)", id, err)
		}
	}
	seen := drainIDs(ctx, t, b, cl)
	ids := make([]string, 0, len(seen))
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s received %d times", id, n)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if want := []string{"after", "back", "before", "during"}; !slices.Equal(ids, want) {
		t.Errorf("jobs kept %v, want %v: each write that failed for want of a replica is on the master", ids, want)
	}
}
