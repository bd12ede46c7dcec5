package queuetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
)

func workPayload(i int) string { return "ms:" + strconv.Itoa(5+i%4*5) }

func noPoison() map[string]bool { return map[string]bool{} }

// faultWorkerKilled: three worker processes; one is killed with SIGKILL while it handles jobs.
// The jobs it held come back after their lease; the jobs it had prefetched without starting
// come back with their attempts unspent.
func faultWorkerKilled(r *faultRun) {
	n := r.size.jobs
	for range 3 {
		r.startWorker()
	}
	// The last quarter of the jobs is produced after the fault (here and in BrokerPause and
	// Failover), so that an ack follows it even when a loaded machine let the workers finish
	// the others first.
	head := n - n/4
	produced := r.startProducer(head, 0, workPayload)
	r.waitFor("a third of the jobs settled", func() bool { return r.settledCount() >= n/3 })
	r.killWorker(0)
	killedAt := time.Now()
	tail := r.startProducerAfter(produced, head, n, 0, workPayload)
	d := r.ackAfter(killedAt)
	<-tail
	r.drained(n)
	a := r.check(noPoison(), faultWorkers, r.f.inHand())
	r.report("WorkerKilled", a, fmt.Sprintf("first ack after the kill %v", d.Round(time.Millisecond)))
}

// faultPoison: two poison jobs among the others, whose handler exits its process; the suite
// starts a new worker for each that dies. Each poison job is dead-lettered with ReasonAttempts
// after exactly faultMaxAttempts starts (its dead letter says so; a start of one can go
// unreported when the other exits the process in the same instant); no other job's attempts
// grow from the crashes, and no other job is dead-lettered unless each of its runs that the
// worker reported was in a process the poison took down: its redelivery travels with the
// poison's, after the same lease, it starts in the same instant, and the exit cuts it
// (sometimes before the worker reports the start, or the burial). Such neighbours are counted
// in the report.
func faultPoison(r *faultRun) {
	n := r.size.jobs / 2
	poison := map[string]bool{jobID(n / 4): true, jobID(n / 2): true}
	r.startWorker()
	r.startWorker()
	produced := r.startProducer(n, 0, func(i int) string {
		if poison[jobID(i)] {
			return "poison"
		}
		return workPayload(i)
	})
	// Replace each worker the poison takes down, as a supervisor would: at most one per
	// poison start, and two spare.
	restarts := 0
	r.waitFor("every job settled through the poison", func() bool {
		r.mu.Lock()
		var dead int
		for _, w := range r.workers {
			select {
			case <-w.done:
				dead++
			default:
			}
		}
		alive := len(r.workers) - dead
		r.mu.Unlock()
		for ; alive < 2 && restarts < len(poison)*faultMaxAttempts+2; alive++ {
			restarts++
			r.startWorker()
		}
		// Every job accepted, none stored, the poison dead: a job handled by a process that
		// exited before it could report its ack is settled all the same.
		r.mu.Lock()
		all := len(r.accepted) == n
		r.mu.Unlock()
		if !all {
			return false
		}
		s, err := r.q.Stats(r.ctx)
		return err == nil && s.Ready+s.InFlight+s.Delayed == 0 && s.Dead >= len(poison)
	})
	<-produced
	// Each exit may cut the report of the starts that the process's other handlers had just
	// made, the other poison job's among them.
	a := r.check(poison, restarts*(faultWorkers-1), restarts*r.f.inHand())
	r.report("PoisonProcess", a, fmt.Sprintf("%d worker processes lost to the poison", restarts))
}

// faultBrokerCrash: a server is killed with SIGKILL and restarted on its store, size.crashes
// times, while jobs are handled. Nothing accepted is lost, nothing settled comes
// back (a 2.9 server can resurrect removed messages: the backend removes them), and the
// consumers recover by themselves each time: within the recovery bound of the restart with one
// server, and of the kill in a cluster, whose other nodes go on serving.
func faultBrokerCrash(r *faultRun) {
	n, crashes := r.size.jobs, r.size.crashes
	cluster := r.f.Broker.Nodes() > 1
	// With one server, the jobs are all accepted before the crashes: a server may lose what it
	// acknowledged in the instant before a SIGKILL (nats-server 2.9 buffers its writes), which
	// no client can tell; the outages of Enqueue are the pause's and the failover's to test.
	// Nothing is handled while it is down, so work is left at every crash. A cluster loses
	// nothing acknowledged with one node, and goes on serving while it is down (it may finish
	// all the work before the node is back): there the jobs come in batches, the first before
	// the workers start and the next one after each crash, so that an ack follows every kill
	// even when the workers finished a batch before the kill came (a loaded machine runs the
	// workers' processes while this one waits to see half of it settled).
	batch := n / (crashes + 1)
	if cluster {
		r.produceRange(0, batch, 0, workPayload)
	} else {
		r.produce(n, 0, workPayload)
		// A server that may lose the writes it acknowledged last keeps the jobs from
		// the workers until they are past that span: every accepted job is stored.
		produced := time.Now()
		r.waitFor("the enqueues past the span a kill may lose", func() bool { return time.Since(produced) >= r.f.LostWrites })
	}
	for range 2 {
		r.startWorker()
	}
	var recoveries []time.Duration
	var kills []time.Time
	for c := range crashes {
		want := (c + 1) * n / (crashes + 2)
		if cluster {
			want = c*batch + batch/2
		}
		r.waitFor(fmt.Sprintf("%d jobs settled before crash %d", want, c+1), func() bool { return r.settledCount() >= want })
		r.f.Broker.Kill(r.t, 0)
		killed := time.Now()
		kills = append(kills, killed)
		if os.Getenv("CORRAL_FAULTS_DEBUG") != "" {
			r.t.Logf("killed at %s", killed.Format("05.000"))
		}
		if !cluster {
			r.outage()
		}
		r.f.Broker.Restart(r.t, 0)
		// In a cluster the time counts from the kill: the other nodes serve meanwhile.
		from := time.Now()
		if cluster {
			from = killed
			end := (c + 2) * batch
			if c == crashes-1 {
				end = n
			}
			r.produceRange((c+1)*batch, end, 0, workPayload)
		}
		recoveries = append(recoveries, r.recovered(fmt.Sprintf("crash %d", c+1), from))
		if !cluster {
			r.healthy()
		}
	}
	r.drained(n)
	// On one server a job is handled twice only if its handler ran at a crash (its ack lost
	// with the server): jobs prefetched but not started, and jobs acked to a server that then
	// lost its consumer's state, are not run again. In a cluster the consumer's new leader
	// also delivers again what its predecessor had just delivered to a process that did not
	// reconnect, and still holds it: every job in hand counts.
	maxDup := 2 * faultWorkers * crashes
	if cluster {
		maxDup = 2 * r.f.inHand() * crashes
	}
	maxDup += r.acksBefore(kills, r.f.LostWrites)
	a := r.check(noPoison(), 2*faultWorkers*crashes, maxDup)
	after := "restart"
	if cluster {
		after = "kill"
	}
	r.report("BrokerCrash", a, fmt.Sprintf("%d crashes; first ack after each %s %v", crashes, after, rounded(recoveries)))
}

// acksBefore counts the acks reported within span before one of kills (and up to a call
// timeout after it, for the report's way from the worker): with a server that may lose the
// writes of that span (Faults.LostWrites), the jobs that may be delivered again. Zero if
// span is.
func (r *faultRun) acksBefore(kills []time.Time, span time.Duration) int {
	if span <= 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.kind != "A" {
			continue
		}
		for _, k := range kills {
			if e.at.After(k.Add(-span)) && e.at.Before(k.Add(r.f.CallTimeout)) {
				n++
				break
			}
		}
	}
	return n
}

// pauseTimeouts is how many call timeouts BrokerPause's pause lasts.
const pauseTimeouts = 3

// faultBrokerPause: a server (the queue's leader, in a cluster) is stopped with SIGSTOP for
// three call timeouts, then continued. Requests lost in the pause fail with ErrUnavailable and
// are retried; the consumers recover by themselves.
func faultBrokerPause(r *faultRun) {
	n := r.size.jobs
	for range 2 {
		r.startWorker()
	}
	head := n - n/4
	produced := r.startProducer(head, 2*time.Millisecond, workPayload)
	r.waitFor("a third of the jobs settled", func() bool { return r.settledCount() >= n/3 })
	node := max(r.f.Broker.Leader(r.t, r.name), 0)
	r.f.Broker.Pause(r.t, node)
	pause := pauseTimeouts * r.f.CallTimeout
	time.Sleep(pause) // the fault itself: a server that answers nothing for a while
	r.f.Broker.Continue(r.t, node)
	continued := time.Now()
	tail := r.startProducerAfter(produced, head, n, 2*time.Millisecond, workPayload)
	d := r.recovered("pause", continued)
	<-tail
	r.drained(n)
	// A pause longer than the lease lets the broker deliver again the jobs the processes
	// hold once per lease it lasts (and the acks sent to the paused server are lost).
	leases := int((pause + faultLease*3/2 - 1) / (faultLease * 3 / 2))
	// A start lost with its reply hides one; with starts made as jobs are received, each
	// worker's receive abandoned at the call timeout in the pause is one too, which the server
	// runs when it continues: one per call timeout of the pause, and the one in flight.
	hidden := 2 * faultWorkers
	if r.startsOnReceive {
		hidden *= 1 + pauseTimeouts
	}
	a := r.check(noPoison(), hidden, 2*r.f.inHand()*(1+leases))
	r.report("BrokerPause", a, fmt.Sprintf("paused node %d for %v; first ack after it continued %v", node, pause, d.Round(time.Millisecond)))
}

// faultFailover: the server leading the queue's data is killed; the others elect a new leader
// and the consumers carry on by themselves. The node is restarted later.
func faultFailover(r *faultRun) {
	n := r.size.jobs
	for range 2 {
		r.startWorker()
	}
	head := n - n/4
	produced := r.startProducer(head, 2*time.Millisecond, workPayload)
	r.waitFor("a third of the jobs settled", func() bool { return r.settledCount() >= n/3 })
	leader := r.f.Broker.Leader(r.t, r.name)
	if leader < 0 {
		r.t.Fatal("no leader to fail over")
	}
	r.f.Broker.Kill(r.t, leader)
	killed := time.Now()
	tail := r.startProducerAfter(produced, head, n, 2*time.Millisecond, workPayload)
	d := r.recovered("failover", killed)
	r.waitFor("two thirds of the jobs settled", func() bool { return r.settledCount() >= 2*n/3 })
	r.f.Broker.Restart(r.t, leader)
	<-tail
	r.drained(n)
	a := r.check(noPoison(), 2*faultWorkers, 2*r.f.inHand())
	r.report("Failover", a, fmt.Sprintf("killed leader node %d; first ack after the kill %v", leader, d.Round(time.Millisecond)))
}

func rounded(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// faultSharedSettings: a second process opening the queue with other settings is refused,
// with an error naming the setting and both values, and the first process's guarantees stand.
func faultSharedSettings(t *testing.T, f Faults) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("S%x", b)
	open := func(opts ...queue.Option) (*queue.Queue[string], error) {
		t.Helper()
		q, release, err := openQueue(f.Open, f.Broker.Addr(), name, f.RecoveryBound(), opts...)
		if err == nil {
			t.Cleanup(release)
		}
		return q, err
	}
	base := []queue.Option{queue.WithDedupHorizon(time.Hour), queue.WithCapacity(100),
		queue.WithOverflow(queue.Reject), queue.WithDeadLetterLimit(50)}
	q1, err := open(base...)
	if err != nil {
		t.Fatalf("first process: %v", err)
	}
	ctx := context.Background()
	if _, err := q1.Enqueue(ctx, "x", queue.WithID("x")); err != nil {
		t.Fatal(err)
	}
	checkOtherSettingsRefused(t, open)
	// Nothing was weakened: the first process's horizon still holds the ID.
	if _, err := q1.Enqueue(ctx, "x again", queue.WithID("x")); !errors.Is(err, queue.ErrDuplicate) {
		t.Errorf("Enqueue of a taken ID after the refused opens: %v, want ErrDuplicate", err)
	}
	// The lease is shared too: a consumer asking for another is refused.
	q2, err := open(base...)
	if err != nil {
		t.Fatalf("second process with the same settings: %v", err)
	}
	checkLeaseShared(t, q1, q2)
}

// checkOtherSettingsRefused checks that a second process opening the queue with open, each
// time with one setting other than the first process's, is refused with an error naming the
// setting, its value and the queue's.
func checkOtherSettingsRefused(t *testing.T, open func(opts ...queue.Option) (*queue.Queue[string], error)) {
	t.Helper()
	for _, tc := range []struct {
		setting, mine, queue string
		opts                 []queue.Option
	}{
		{"dedup horizon", "0s", "1h0m0s", []queue.Option{queue.WithCapacity(100), queue.WithOverflow(queue.Reject), queue.WithDeadLetterLimit(50)}},
		{"capacity", "0", "100", []queue.Option{queue.WithDedupHorizon(time.Hour), queue.WithOverflow(queue.Reject), queue.WithDeadLetterLimit(50)}},
		{"overflow", "block", "reject", []queue.Option{queue.WithDedupHorizon(time.Hour), queue.WithCapacity(100), queue.WithDeadLetterLimit(50)}},
		{"dead-letter limit", "10000", "50", []queue.Option{queue.WithDedupHorizon(time.Hour), queue.WithCapacity(100), queue.WithOverflow(queue.Reject)}},
	} {
		_, err := open(tc.opts...)
		if err == nil || !strings.Contains(err.Error(), tc.setting+" "+tc.mine) || !strings.Contains(err.Error(), tc.queue) {
			t.Errorf("second process with another %s: %v; want an error naming %q, %s and %s", tc.setting, err, tc.setting, tc.mine, tc.queue)
		}
	}
}

// checkLeaseShared checks that once q1's consumer has a lease of 2s, q2 (the same queue in a
// second process) is refused a consumer with another lease, with an error naming the lease,
// and granted one with the same.
func checkLeaseShared(t *testing.T, q1, q2 *queue.Queue[string]) {
	t.Helper()
	ctx := context.Background()
	h := func(ctx context.Context, j queue.Job[string]) error { return nil }
	c1, err := q1.Consume(ctx, h, queue.WithLease(2*time.Second), queue.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close(ctx)
	if c2, err := q2.Consume(ctx, h, queue.WithLease(4*time.Second), queue.WithWorkers(1)); err == nil || !strings.Contains(err.Error(), "lease") {
		if c2 != nil {
			c2.Close(ctx)
		}
		t.Errorf("consumer with another lease: %v, want an error naming the lease", err)
	}
	c3, err := q2.Consume(ctx, h, queue.WithLease(2*time.Second), queue.WithWorkers(1))
	if err != nil {
		t.Fatalf("consumer with the same lease: %v", err)
	}
	c3.Close(ctx)
}
