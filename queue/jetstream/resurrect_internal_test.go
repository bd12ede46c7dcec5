package jetstream

import (
	"context"
	"errors"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

// A replicated 2.9 consumer whose leader was paused, and continued after the others elected
// another, delivers for a moment from its old state: jobs acked since (seen in the fault
// suite's BrokerPause, tens of jobs run twice). Such a delivery is simulated by the tombstone
// of an ack written for a job being delivered. After the broker failed to answer, Ack writes
// the tombstone before it returns; Start finds the tombstone once it has written the job's
// record, drops the record, and returns queue.ErrLeaseLost; a Receive finds it before it
// hands the job out, and removes the job. In calm, Start reads no tombstone. An ack whose
// tombstone cannot be written keeps the job's record. A server of 2.10 or later keeps no
// tombstones, and the jobs run.
func TestStaleDeliveryOfAckedJob(t *testing.T) {
	ctx, js, b := openReplicated(t, "stale")
	if err := b.CheckLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	receive := func(id string) *driver.Delivery {
		t.Helper()
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		d := new(driver.Delivery)
		if err := b.Receive(ctx, time.Minute, d); err != nil {
			t.Fatal(err)
		}
		if d.ID != id {
			t.Fatalf("received %s, want %s", d.ID, id)
		}
		return d
	}

	// In calm, a tombstone is not looked for: the Start succeeds.
	calm := receive("calm")
	b.tombstone(ctx, calm)
	b.shaken.Store(0) // whatever the cluster's start showed this backend
	if err := b.Start(ctx, calm); err != nil {
		t.Fatalf("Start in calm: %v", err)
	}
	if err := b.Ack(ctx, calm); err != nil {
		t.Fatal(err)
	}

	b.restless() // a request the broker did not answer
	// Ack writes the tombstone before it returns.
	acked := receive("acked")
	if err := b.Start(ctx, acked); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(ctx, acked); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.entombed(ctx, acked.Seq, acked.ID); err != nil || ok != b.tombstones {
		t.Fatalf("tombstone of a job acked after unrest: %v, %v; want %v", ok, err, b.tombstones)
	}
	stale := receive("stale")
	b.tombstone(ctx, stale)
	err := b.Start(ctx, stale)
	if !b.tombstones {
		if err != nil {
			t.Fatalf("Start on a server without tombstones: %v", err)
		}
		return
	}
	if !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Start of an acked job's stale delivery: %v, want ErrLeaseLost", err)
	}
	if st, rev, err := b.loadState(ctx, stale.Seq, stale.ID); err != nil || rev != 0 {
		t.Fatalf("state record left: %+v, revision %d, %v", st, rev, err)
	}
	// Not terminated: the consumer that delivered it stale is gone in a real case, and the
	// sequence's job, on another replica, may be another job.
	if ok, err := b.stored(ctx, stale); err != nil || !ok {
		t.Fatalf("the stale delivery's job was removed (%v)", err)
	}

	// A job delivered with its tombstone there already is not handed out.
	if _, err := b.Enqueue(ctx, driver.Message{ID: "held", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	raw, err := b.work.GetLastMsgForSubject(ctx, b.jobSubject("", "held"))
	if err != nil {
		t.Fatal(err)
	}
	b.tombstone(ctx, &driver.Delivery{Message: driver.Message{ID: "held"}, Seq: raw.Sequence})
	// Receives of a second each, until the job was delivered and removed (a pull request
	// the server dropped is made again within about a second: see consume), beside one that
	// keeps the prefetching going between them (a job released as prefetching stops comes
	// back a second later on a 2.9 server: see drainPump).
	kctx, kcancel := context.WithCancel(ctx)
	kept := make(chan error, 1)
	go func() { kept <- b.Receive(kctx, time.Minute, new(driver.Delivery)) }()
	for i := 0; b.Resurrected() == 0; i++ {
		if i == 30 {
			t.Fatal("the job with a tombstone was not delivered in 30 Receives")
		}
		b.restless() // keep deliveries checked
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		d := new(driver.Delivery)
		err := b.Receive(rctx, time.Minute, d)
		rcancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Receive: %v (job %q), want nothing until its ctx ends", err, d.ID)
		}
	}
	kcancel()
	if err := <-kept; !errors.Is(err, context.Canceled) {
		t.Fatalf("the keeping Receive: %v, want it cancelled", err)
	}
	if n := b.Resurrected(); n != 1 {
		t.Fatalf("Resurrected() = %d, want 1", n)
	}

	// A tombstone that cannot be written leaves the job's state record, the other proof of
	// its ack (see staleRun).
	lost := receive("untombed")
	if err := b.Start(ctx, lost); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, b.done.CachedInfo().Config.Name); err != nil {
		t.Fatal(err)
	}
	b.shaken.Store(0) // Ack leaves the tombstone to the aftermath
	if err := b.Ack(ctx, lost); err != nil {
		t.Fatal(err)
	}
	if err := b.after.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if st, rev, err := b.loadState(ctx, lost.Seq, lost.ID); err != nil || rev == 0 || st.Starts != 1 {
		t.Fatalf("state record of a job acked without its tombstone: %+v, revision %d, %v", st, rev, err)
	}
}

// A consumer blind to the jobs past its deliveries (see blind.go) is simulated by the info of a
// consumer that delivered up to a stored job's predecessor and counts nothing pending, with
// pull requests waiting. blind holds only once that has lasted two leases of calm, then not
// again for four leases, and not while anything is pending or when no job is stored past the
// deliveries (the last sequence a removed job's). The step-down it leads to elects another
// leader of the consumer, which goes on serving. The same consumer's ack floor moved past the
// stored job does not make it count as acked (see ackFloor).
func TestBlindConsumerStepsDown(t *testing.T) {
	ctx, _, b := openReplicated(t, "blind")
	seqOf := func(id string) uint64 {
		t.Helper()
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		raw, err := b.work.GetLastMsgForSubject(ctx, b.jobSubject("", id))
		if err != nil {
			t.Fatal(err)
		}
		return raw.Sequence
	}
	a := seqOf("a")
	b.statsMu.Lock()
	defer b.statsMu.Unlock()
	wi, err := b.statWork.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ci := &natsjs.ConsumerInfo{
		Config:     natsjs.ConsumerConfig{AckWait: time.Second},
		Delivered:  natsjs.SequenceInfo{Stream: a - 1},
		NumWaiting: 1,
	}
	b.unrest.Store(time.Now().Add(-time.Hour).UnixNano()) // calm
	blind := func(want bool, when string) {
		t.Helper()
		got, err := b.blind(ctx, wi, ci)
		if err != nil || got != want {
			t.Fatalf("blind %s: %v, %v; want %v", when, got, err, want)
		}
	}
	blind(false, "at first sight")
	twoLeases := func() { b.blindSince = time.Now().Add(-3 * time.Second) } // of a second each
	twoLeases()
	blind(true, "after two leases")
	blind(false, "again within four leases")
	b.blindNext = time.Time{}
	ci.NumPending = 1
	blind(false, "with a job pending")
	ci.NumPending = 0
	blind(false, "at first sight again")
	twoLeases()
	ci.Delivered.Consumer++
	blind(false, "once the consumer delivered")
	twoLeases()
	b.blindSeen = time.Now().Add(-time.Minute)
	blind(false, "after a minute without a look")
	twoLeases()
	blind(true, "after two leases of looks")
	b.blindNext = time.Time{}
	twoLeases()
	ci.Delivered.Stream = a // "a" delivered; "gone" is stored after it and removed
	gone := seqOf("gone")
	if err := b.work.DeleteMsg(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if wi, err = b.statWork.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if wi.State.LastSeq != gone || wi.State.Msgs != 1 {
		t.Fatalf("stream: last sequence %d, %d messages; want %d, 1", wi.State.LastSeq, wi.State.Msgs, gone)
	}
	blind(false, "with no job past the deliveries")

	// A floor past a stored job, never acked (a 2.9 consumer's, past a job it skipped), is
	// no proof of its ack on a replicated queue of a 2.9 server: "a" stays.
	ci.AckFloor.Stream = gone
	if !b.tombstones {
		if f := b.ackFloor(ci); f != gone {
			t.Fatalf("ackFloor = %d, want the consumer's, %d", f, gone)
		}
	} else if removed, err := b.removeAcked(ctx, wi, ci); err != nil || removed {
		t.Fatalf("removeAcked below a floor past a skipped job: %v, %v; want nothing removed", removed, err)
	} else if settled, err := b.settledAbove(ctx, a, "a", b.ackFloor(ci), false); err != nil || settled {
		t.Fatalf("settled below the consumer's floor: %v, %v; want false", settled, err)
	}

	// A consumer without a leader drops the requests made to it, or refuses them at once
	// while one is elected: each look is bounded, and the looks are paced, within a minute.
	// leader returns the consumer's leader once it is not the server not ("": any).
	leader := func(not string) string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		last := "none yet"
		for time.Now().Before(deadline) && ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			ci, err := b.statCons.Info(rctx)
			rcancel()
			switch {
			case err != nil:
				last = err.Error()
			case ci.Cluster == nil || ci.Cluster.Leader == "":
				last = "no leader"
			case ci.Cluster.Leader == not:
				last = "leader " + not
			default:
				return ci.Cluster.Leader
			}
			<-tick.C
		}
		t.Fatalf("no consumer leader other than %q within a minute; the last look: %s", not, last)
		return ""
	}
	before := leader("")
	if err := b.stepDown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := b.stepDowns.Load(); n != 1 {
		t.Fatalf("stepDowns = %d, want 1", n)
	}
	// A look can still reach the old leader before it has stepped down.
	leader(before)
	b.statsMu.Unlock() // Receive may tidy
	defer b.statsMu.Lock()
	d := new(driver.Delivery)
	if err := b.Receive(ctx, time.Minute, d); err != nil || d.ID != "a" {
		t.Fatalf("Receive after the step-down: %q, %v", d.ID, err)
	}
}

// A replicated 2.9 consumer led from a replica that missed jobs delivers the later ones at
// sequences that are other jobs' on the work stream's leader (seen in the fault suite's
// BrokerPause: an ack of such a delivery removed the other job, lost). While deliveries are
// checked, Start of such a delivery returns queue.ErrLeaseLost with no record written and the
// job not settled, and asks the consumer's leader to step down once in eight leases, not for a
// delivery that arrived before the last request; Bury of such a delivery not started returns
// queue.ErrLeaseLost too, with no dead letter. A delivery at its own sequence, or at one that
// holds no job, starts and asks nothing. On a server of 2.10 or later nothing is checked.
// Such deliveries are simulated by giving a delivery another sequence.
func TestMisnumberedDelivery(t *testing.T) {
	ctx, _, b := openReplicated(t, "misnum")
	if err := b.CheckLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	var got [3]*driver.Delivery
	for i, id := range []string{"a", "b", "c"} {
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		got[i] = new(driver.Delivery)
		if err := b.Receive(ctx, time.Minute, got[i]); err != nil {
			t.Fatal(err)
		}
		if got[i].ID != id {
			t.Fatalf("received %s, want %s", got[i].ID, id)
		}
	}
	a, other, c := got[0], got[1], got[2]
	misnumbered := *a
	misnumbered.Seq = other.Seq
	b.restless() // a request the broker did not answer: deliveries are checked
	if !b.tombstones {
		t.Logf("server without tombstones (2.10 or later): deliveries are not checked")
		if err := b.Start(ctx, &misnumbered); err != nil {
			t.Fatalf("Start: %v", err)
		}
		return
	}
	stepDowns := func(want uint64, after string) {
		t.Helper()
		if n := b.stepDowns.Load(); n != want {
			t.Fatalf("%d step-downs asked for after %s, want %d", n, after, want)
		}
	}

	if err := b.Start(ctx, other); err != nil {
		t.Fatalf("Start of a delivery at its own sequence: %v", err)
	}
	stepDowns(0, "a delivery at its own sequence")
	_, rev, err := b.loadState(ctx, other.Seq, other.ID)
	if err != nil || rev == 0 {
		t.Fatalf("record of a started job: revision %d, %v", rev, err)
	}
	nowhere := *c
	nowhere.Seq = c.Seq + 1000
	if err := b.Start(ctx, &nowhere); err != nil {
		t.Fatalf("Start of a delivery at a sequence with no job: %v, want nil", err)
	}
	stepDowns(0, "a delivery at a sequence with no job")

	tok := a.Token.(*delivered)
	b.misDown.Store(time.Now().Add(-9 * time.Minute).UnixNano()) // a request nine leases ago
	tok.arrived = time.Now().Add(-10 * time.Minute)              // a delivery that came before it
	start := func(i int) {
		t.Helper()
		if err := b.Start(ctx, &misnumbered); !errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Start %d of a delivery at another job's sequence: %v, want ErrLeaseLost", i, err)
		}
	}
	start(1)
	stepDowns(0, "a delivery that arrived before the last request")
	tok.arrived = time.Now()
	start(2)
	stepDowns(1, "a delivery that arrived after it")
	start(3)
	stepDowns(1, "another one at once")
	fiveLeases := time.Now().Add(-5 * time.Minute).UnixNano()
	b.misDown.Store(fiveLeases)
	tok.arrived = time.Now()
	start(4)
	if b.misDown.Load() != fiveLeases { // a step-down asked for, answered or not
		t.Fatalf("a step-down asked for five leases after the last request, want none within eight")
	}

	if _, err := b.Bury(ctx, &misnumbered, driver.ReasonExpired, driver.Attempt{}); !errors.Is(err, driver.ErrLeaseLost) {
		t.Fatalf("Bury of a delivery not started, at another job's sequence: %v, want ErrLeaseLost", err)
	}
	if _, err := b.lastDead(ctx, "look", "a"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("dead letter of the refused burial: %v, want ErrNotFound", err)
	}
	if st, now, err := b.loadState(ctx, other.Seq, other.ID); err != nil || now != rev {
		t.Fatalf("record at the other job's sequence: %+v, revision %d (was %d), %v", st, now, rev, err)
	}
	for _, d := range []*driver.Delivery{a, other} {
		if ok, err := b.stored(ctx, d); err != nil || !ok {
			t.Fatalf("job %s was removed (%v)", d.ID, err)
		}
	}
}

// openReplicated opens a backend of a queue replicated on a three-server cluster, with a
// context of two minutes for the test's calls.
func openReplicated(t *testing.T, name string) (context.Context, natsjs.JetStream, *Backend) {
	t.Helper()
	js, err := natsjs.New(natstest.StartCluster(t, 3).Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b := New(js, natstest.Prefix(t)+name, WithReplicas(3), WithCallTimeout(10*time.Second))
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return ctx, js, b
}
