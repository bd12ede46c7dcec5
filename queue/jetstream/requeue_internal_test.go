package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

// A consumer that skipped jobs (see resurrect.go) is simulated by the info a replicated 2.9
// consumer gives after nats-server#6566: every stored job delivered, none pending or ack
// pending. sweep publishes again the jobs neither settled nor started, at new sequences, a
// keyed one with the later jobs of its key behind it, and leaves a job with a state record, and
// the jobs of its key before it; the real consumer, which has delivered nothing, then delivers
// each stored job once, each key's in order.
func TestSweepRequeuesSkippedJobs(t *testing.T) {
	ctx, js, b := openSweepTest(t, driver.Config{DedupHorizon: time.Minute})
	seqs := map[string]uint64{}
	for _, m := range []driver.Message{
		{ID: "plain", Body: []byte("p"), Headers: map[string]string{"trace": "t1"}},
		{ID: "alone", Key: "k1", Body: []byte("a")},
		{ID: "head", Key: "k2", Body: []byte("h")},
		{ID: "tail", Key: "k2", Body: []byte("t")},
		{ID: "recorded", Body: []byte("r")},
		{ID: "copied", Body: []byte("c")},
		{ID: "first", Key: "k3", Body: []byte("f")},
		{ID: "second", Key: "k3", Body: []byte("s")},
	} {
		if _, err := b.Enqueue(ctx, m); err != nil {
			t.Fatalf("enqueue %s: %v", m.ID, err)
		}
		raw, err := b.work.GetLastMsgForSubject(ctx, b.jobSubject(m.Key, m.ID))
		if err != nil {
			t.Fatal(err)
		}
		seqs[m.ID] = raw.Sequence
	}
	// "recorded" and "second" have a state record (a run of them may be in progress
	// somewhere), which holds "first", the earlier job of its key, too; "copied" was
	// published again by a process that stopped before it deleted the original.
	for _, id := range []string{"recorded", "second"} {
		rec, _ := json.Marshal(jobState{ID: id, Starts: 1})
		if _, err := js.Publish(ctx, b.stateSubject(seqs[id]), rec); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := b.work.GetMsg(ctx, seqs["copied"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.requeueCopy(ctx, raw); err != nil {
		t.Fatal(err)
	}

	wi, err := b.statWork.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	skipped := &natsjs.ConsumerInfo{
		Config:    natsjs.ConsumerConfig{AckWait: time.Second},
		Delivered: natsjs.SequenceInfo{Stream: seqs["second"]}, // the copy of "copied" is later
	}
	b.unrest.Store(time.Now().Add(-3 * time.Second).UnixNano()) // calm for more than two leases
	sweep := func() bool { return sweepOnce(ctx, t, b, wi, skipped) }
	// While another process's claim lasts, this one moves nothing.
	claim := func(end time.Time) {
		t.Helper()
		if _, err := js.Publish(ctx, b.sweepSubject(), []byte(strconv.FormatInt(end.UnixNano(), 10))); err != nil {
			t.Fatal(err)
		}
	}
	claim(time.Now().Add(time.Hour))
	if sweep() || b.Requeued() != 0 {
		t.Fatalf("a sweep under another's claim moved %d jobs", b.Requeued())
	}
	claim(time.Now().Add(-time.Second))
	if !sweep() {
		t.Fatal("a sweep after the other's claim ended moved nothing")
	}
	if n := b.Requeued(); n != 5 {
		t.Errorf("Requeued() = %d, want 5 (plain, alone, head, tail, copied)", n)
	}
	moved := map[string]bool{"plain": true, "alone": true, "head": true, "tail": true, "copied": true}
	for id, seq := range seqs {
		raw, err := b.work.GetMsg(ctx, seq)
		if stays := err == nil && raw.Header.Get(hdrID) == id; stays == moved[id] {
			t.Errorf("%s at its old sequence %d: stored = %v, want %v (err %v)", id, seq, stays, !moved[id], err)
		}
	}

	var got []string
	at := map[string]uint64{}
	for len(got) < len(seqs) {
		var d driver.Delivery
		if err := b.Receive(ctx, time.Minute, &d); err != nil {
			t.Fatalf("receive after %v: %v", got, err)
		}
		if moved[d.ID] == (d.Seq == seqs[d.ID]) {
			t.Errorf("%s delivered at sequence %d (enqueued at %d), moved %v", d.ID, d.Seq, seqs[d.ID], moved[d.ID])
		}
		if d.ID == "plain" && (string(d.Body) != "p" || d.Headers["trace"] != "t1") {
			t.Errorf("plain delivered with body %q, headers %v", d.Body, d.Headers)
		}
		got = append(got, d.ID)
		at[d.ID] = d.Seq
		if d.ID == "recorded" || d.ID == "second" {
			continue // its record says it was started: the test does not settle it
		}
		if err := b.Start(ctx, &d); err != nil {
			t.Fatalf("start %s: %v", d.ID, err)
		}
		if err := b.Ack(ctx, &d); err != nil {
			t.Fatalf("ack %s: %v", d.ID, err)
		}
	}
	slices.Sort(got)
	if want := []string{"alone", "copied", "first", "head", "plain", "recorded", "second", "tail"}; !slices.Equal(got, want) {
		t.Errorf("delivered %v, want each job once: %v", got, want)
	}
	if at["head"] >= at["tail"] || at["first"] >= at["second"] {
		t.Errorf("sequences %v: a key's jobs out of order", at)
	}
}

// A 2.9 consumer that counts as ack pending a job it no longer has (see resurrect.go) hides a
// job it does not track from the counts. Once this process has seen it deliver nothing for two
// leases with pull requests waiting, sweep deletes the settled jobs among those it delivered,
// publishes again the ones neither started, held for a start nor handed back, and leaves the
// rest; and it looks again only a lease later.
func TestSweepOfStalledConsumer(t *testing.T) {
	ctx, _, b := openSweepTest(t, driver.Config{})
	seqs := map[string]uint64{}
	for _, id := range []string{"held", "lost", "marked", "acked", "late"} {
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte(id)}); err != nil {
			t.Fatalf("enqueue %s: %v", id, err)
		}
		raw, err := b.work.GetLastMsgForSubject(ctx, b.jobSubject("", id))
		if err != nil {
			t.Fatal(err)
		}
		seqs[id] = raw.Sequence
	}
	// "held" is in a process's hands, waiting for a start (a rate limit's) with its lease
	// renewed.
	var held driver.Delivery
	if err := b.Receive(ctx, time.Minute, &held); err != nil || held.ID != "held" {
		t.Fatalf("receive = %s, %v; want held", held.ID, err)
	}
	if err := b.Extend(ctx, &held, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.mark(ctx, "marked", markDelayed); err != nil {
		t.Fatal(err)
	}
	// "acked" was acked long ago, its removal lost: its record shows a run whose lease ended an
	// hour ago (see staleRun; on a 2.9 server its tombstone would say it too).
	rec, _ := json.Marshal(jobState{ID: "acked", Starts: 1, Until: time.Now().Add(-time.Hour)})
	if _, err := b.js.Publish(ctx, b.stateSubject(seqs["acked"]), rec); err != nil {
		t.Fatal(err)
	}

	wi, err := b.statWork.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stalled := &natsjs.ConsumerInfo{
		Config:        natsjs.ConsumerConfig{AckWait: time.Second},
		Delivered:     natsjs.SequenceInfo{Consumer: 40, Stream: seqs["marked"] + 1}, // "late" is not delivered yet
		NumAckPending: 4,                                                             // "held", "marked", and two it no longer has: no job looks untracked
		NumWaiting:    1,
		NumPending:    1,
	}
	b.unrest.Store(time.Now().Add(-time.Hour).UnixNano()) // calm for longer than any lease here
	sweep := func() bool { return sweepOnce(ctx, t, b, wi, stalled) }
	if sweep() {
		t.Fatal("the first sight of the consumer's delivery count swept jobs")
	}
	b.statsMu.Lock()
	b.stallSince = b.stallSince.Add(-3 * time.Second) // two leases and more ago
	b.statsMu.Unlock()
	if !sweep() {
		t.Fatal("a consumer that delivered nothing for two leases: nothing swept")
	}
	if r, q := b.Resurrected(), b.Requeued(); r != 1 || q != 1 {
		t.Errorf("Resurrected, Requeued = %d, %d; want 1 (acked), 1 (lost)", r, q)
	}
	for id, stays := range map[string]bool{"held": true, "lost": false, "marked": true, "acked": false, "late": true} {
		raw, err := b.work.GetMsg(ctx, seqs[id])
		if got := err == nil && raw.Header.Get(hdrID) == id; got != stays {
			t.Errorf("%s at its sequence %d: stored = %v, want %v (err %v)", id, seqs[id], got, stays, err)
		}
	}
	if _, err := b.work.GetLastMsgForSubject(ctx, b.jobSubject("", "lost")); err != nil {
		t.Errorf("lost not published again: %v", err)
	}
	if sweep() {
		t.Error("a second sweep within the lease looked at the jobs again")
	}
}

// openSweepTest opens a Backend with cfg on a server of its own, closed at the test's end, and
// returns a context bounding the test, the connection's JetStream and the Backend.
func openSweepTest(t *testing.T, cfg driver.Config) (context.Context, natsjs.JetStream, *Backend) {
	t.Helper()
	js, err := natsjs.New(natstest.Start(t).Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	b := New(js, natstest.Prefix(t)+"sweep", WithCallTimeout(10*time.Second))
	if err := b.Open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return ctx, js, b
}

// sweepOnce runs b's sweep with wi and ci, as Stats does, and reports whether it removed jobs.
func sweepOnce(ctx context.Context, t *testing.T, b *Backend, wi *natsjs.StreamInfo, ci *natsjs.ConsumerInfo) bool {
	t.Helper()
	b.statsMu.Lock()
	defer b.statsMu.Unlock()
	swept, err := b.sweep(ctx, wi, ci)
	if err != nil {
		t.Fatal(err)
	}
	return swept
}

// A Receive cancelled while it takes a prefetched job releases the job, and stops prefetching
// if it was the only receiver, before it returns: the job is ready then, and the next Receive
// gets it, attempt 1.
func TestCancelledTakeReleases(t *testing.T) {
	ctx, _, b := openSweepTest(t, driver.Config{})
	if err := b.CheckLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(ctx, driver.Message{ID: "a", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	stop := errors.New("receiver gone")
	b.onTake = func() { cancel(stop) }
	var d driver.Delivery
	if err := b.Receive(rctx, time.Minute, &d); !errors.Is(err, stop) {
		t.Fatalf("Receive cancelled as it took a job: %q, %v; want its ctx's cause", d.ID, err)
	}
	b.onTake = nil
	b.mu.Lock()
	pumping := b.pump != nil
	b.mu.Unlock()
	if pumping {
		t.Error("still prefetching after its only receiver left")
	}
	if s, err := b.Stats(ctx); err != nil || s.Ready != 1 || s.InFlight != 0 {
		t.Fatalf("stats after the cancelled Receive: %+v, %v; want a ready, none in flight", s, err)
	}
	if err := b.Receive(ctx, time.Minute, &d); err != nil {
		t.Fatal(err)
	}
	if d.ID != "a" || d.Attempt != 1 {
		t.Errorf("got %s attempt %d, want a attempt 1", d.ID, d.Attempt)
	}
}

// What a process holds when its last receiver leaves goes back to the broker, and the next
// receiver gets it at once, not when its lease ends: a server older than 2.10.16 loses a job
// NAKed while the only pull request it has waiting is the stopped subscription's, until the
// lease ends (see drainPump; the conformance suite's consumer closed and another started met
// it in about half its runs on 2.9.10). Five rounds: a job received, one held by a receiver
// that leaves as it takes it, one prefetched; the two given back must come within a sixth of
// their lease.
func TestStoppedPumpHandsBack(t *testing.T) {
	ctx, _, b := openSweepTest(t, driver.Config{})
	const lease = time.Minute
	if err := b.CheckLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		ids := []string{fmt.Sprint("a", round), fmt.Sprint("b", round), fmt.Sprint("c", round)}
		for _, id := range ids {
			if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
		var first driver.Delivery
		if err := b.Receive(ctx, lease, &first); err != nil || first.ID != ids[0] {
			t.Fatalf("round %d: received %q, %v; want %s", round, first.ID, err, ids[0])
		}
		rctx, leave := context.WithCancelCause(ctx)
		gone := errors.New("receiver gone")
		b.onTake = func() { leave(gone) }
		var d driver.Delivery
		if err := b.Receive(rctx, lease, &d); !errors.Is(err, gone) {
			t.Fatalf("round %d: Receive that leaves as it takes a job: %q, %v", round, d.ID, err)
		}
		b.onTake = nil
		got := map[string]bool{}
		for range 2 {
			wctx, cancel := context.WithTimeout(ctx, lease/6)
			err := b.Receive(wctx, lease, &d)
			cancel()
			if err != nil {
				t.Fatalf("round %d: the jobs given back: got %v, then %v", round, got, err)
			}
			got[d.ID] = true
			if err := b.Ack(ctx, &d); err != nil {
				t.Fatal(err)
			}
		}
		if !got[ids[1]] || !got[ids[2]] {
			t.Fatalf("round %d: received %v after the receiver left, want %s and %s", round, got, ids[1], ids[2])
		}
		if err := b.Ack(ctx, &first); err != nil {
			t.Fatal(err)
		}
	}
}

// A Receive that leaves as it takes a prefetched job, and gives up waiting at once (its abandon
// context, driver.WithAbandon, as a consumer's Close makes when its ctx ends), returns though
// the server is paused and the call timeout is an hour; the aftermath gives the job back once
// the server continues: it is ready, attempt 1.
func TestGivenUpTakeReturns(t *testing.T) {
	c := natstest.Start(t)
	js, err := natsjs.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := New(js, natstest.Prefix(t)+"giveup", WithCallTimeout(time.Hour))
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	if err := b.CheckLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(ctx, driver.Message{ID: "a", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	abandon, giveUp := context.WithCancel(ctx)
	defer giveUp()
	rctx, leave := context.WithCancelCause(driver.WithAbandon(ctx, abandon))
	stop := errors.New("receiver gone")
	taking, resume := make(chan struct{}), make(chan struct{})
	b.onTake = func() {
		close(taking)
		<-resume
	}
	errc := make(chan error, 1)
	go func() {
		var d driver.Delivery
		errc <- b.Receive(rctx, time.Minute, &d)
	}()
	select {
	case <-taking:
	case <-ctx.Done():
		t.Fatal("Receive never took the job")
	}
	nd := c.Nodes[0]
	nd.Pause(t)
	leave(stop)
	giveUp()
	close(resume)
	select {
	case err := <-errc:
		if !errors.Is(err, stop) {
			t.Fatalf("Receive that gave up: %v; want its ctx's cause", err)
		}
	case <-ctx.Done():
		t.Fatal("Receive that gave up still waits for the paused server")
	}
	nd.Continue(t)
	b.onTake = nil
	if err := b.after.wait(ctx); err != nil {
		t.Fatalf("the aftermath's give-back: %v", err)
	}
	if s, err := b.Stats(ctx); err != nil || s.Ready != 1 || s.InFlight != 0 {
		t.Fatalf("stats after the give-back: %+v, %v; want a ready, none in flight", s, err)
	}
	var d driver.Delivery
	if err := b.Receive(ctx, time.Minute, &d); err != nil {
		t.Fatal(err)
	}
	if d.ID != "a" || d.Attempt != 1 {
		t.Errorf("got %s attempt %d, want a attempt 1", d.ID, d.Attempt)
	}
}
