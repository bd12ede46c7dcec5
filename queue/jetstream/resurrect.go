package jetstream

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
)

// A nats-server 2.9 killed with SIGKILL can lose the removal of messages it had removed from a
// work-queue stream: jobs whose ack was confirmed, and jobs already dead-lettered, are back in
// the stream after the restart. The consumer does not deliver such a job again (its own state
// says it was acked), so a resurrected job would stay for ever, the oldest job of its ordering
// key, blocking every later job of that key. The backend removes them, from its own records of
// what was settled:
//   - a job at or below the consumer's ack floor was acked (Open, Stats and idle Receives purge
//     those, once the broker has served calmly: see removeAcked), but for a queue replicated on
//     a 2.9 server (see ackFloor);
//   - a job with a dead letter written from its stream sequence was dead-lettered;
//   - on a server older than 2.10, a job with a tombstone was acked: Ack writes one per job,
//     at corral.<name>.done.<sequence> in CORRAL_<name>_DONE after the ack (in the background,
//     see aftermath.go, but before the job's state record is removed), which keeps them
//     tombstoneAge (well past the two minutes after which 2.9 has written its removals to
//     disk). Written before the ack, a tombstone would make every ack wait for that stream's
//     leader too.
//   - a job whose state record shows a run whose lease ended more than twice the lease ago,
//     and more than twice the lease after the last unrest this process saw (a request the
//     broker did not answer, missed heartbeats, a new consumer leader, the process's own
//     start), and that the consumer did not deliver again since, was acked at an instant
//     the broker lost its removal: a 2.9 server crashed, or a cluster lost it in a leader
//     change (see staleRun).
// A stalled broker (an election, a paused server) leaves a job it still tracks undelivered
// for longer than any lease, but delivers it again within a lease of serving again: so a job
// is judged by the age of its record only once the broker has served for two leases.
// Stats (and so any operator's dashboard) sweeps the jobs that the consumer no longer
// tracks (the stream holds more than the consumer's pending and ack-pending counts): each
// stored job it has delivered is checked against the records, and deleted if settled.
// A keyed job that finds an older job of its key checks it against these records, and
// deletes it if it was settled. For four times the lease after every reconnection (to a
// restarted server, perhaps), every delivered job is checked too, and terminated instead of
// handled if it was settled: a 2.9 server that lost its consumer's state delivers its
// resurrected jobs again. On a queue replicated on a 2.9 server the same holds for four leases
// after the broker failed to answer or the consumer changed leaders (see suspect), by the
// tombstones and dead letters (see ackFloor): a consumer leader that was paused, continued
// after the others elected another, delivers for a moment from its old state, jobs acked since
// among them. A job acked above the ack floor on a server of 2.10 or later, were it
// resurrected and not delivered again, would block its key until the ack floor passed it.

// A server restarted without its consumer's state also delivers again the jobs that a process
// still holds from before the restart (prefetched, or being handled), and confirms the acks of
// those older deliveries without applying them, or leaves them unanswered: the job stays, and
// its new delivery would run it again. So a Receive that finds the pump older than the last
// reconnection gives its messages back and starts a new one (abandonPump), and for the same four
// leases after a reconnection to a queue of one replica (a replicated consumer keeps its state
// when a server goes), Ack makes sure that the job left the work stream (deleting it if
// the server kept it) before it drops the job's state record, and Start, once it has written the
// record, makes sure that the job is still stored. Starts are serialised by the record
// (compare-and-set), so a Start that succeeds after another delivery's Ack dropped the record
// finds the job gone, and does not run it. On a queue replicated on a 2.9 server, while
// deliveries are checked (see suspect), Ack writes the job's tombstone before it returns and
// before it drops the record, and Start looks for it once it has written the record.

// A replicated consumer of a server older than 2.11 can also skip a job it never delivered: after
// a change of leaders, its next sequence can stay past jobs whose delivery its replicas never
// agreed on (nats-server#6566). The consumer then counts such a job as delivered and neither
// pending nor ack pending, and never delivers it. When the consumer has nothing ack pending (no
// job is in any process's hands) and the broker has served calmly (see calm), sweep
// publishes every such job that the records show neither settled nor started again, on its
// subject and on the condition that it is still the last message there, and then deletes it at
// its old sequence: the consumer delivers the copy (see requeue). The later jobs of its ordering
// key are moved behind it, so that the key keeps its order, and one process at a time moves
// jobs (see claimSweep).
// A 2.9 consumer can also count as ack pending a job it no longer has, and never deliver it
// again (seen after a single server's SIGKILL and restart: its ack floor stays below that job
// for good), which hides from the count above a stored job it does not track. So when this
// process sees the consumer deliver nothing for two leases while it counts jobs ack pending and
// pull requests wait for more (see stalled), sweep looks at every stored job it has delivered
// (if they are at most stalledMax), deletes the settled ones, and moves the ones that were
// neither started nor handed back with a delay.

// ackWait returns the consumer's AckWait: the lease of Receive, 0 until the first Receive.
func (b *Backend) ackWait() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lease
}

// mayHaveForgotten reports whether the server may have lost the consumer's state since this
// process's deliveries were made: the queue has one replica, and the connection reconnected
// within the last four leases (see suspect).
func (b *Backend) mayHaveForgotten(lease time.Duration) bool {
	return b.o.replicas == 1 && b.suspect(lease)
}

// stored reports whether the job of d is still in the work stream at its sequence.
func (b *Backend) stored(ctx context.Context, d *driver.Delivery) (bool, error) {
	raw, err := b.work.GetMsg(ctx, d.Seq)
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, b.fail(ctx, "look up "+d.ID, err)
	}
	return raw.Header.Get(hdrID) == d.ID, nil
}

// misnumbered reports whether deliveries are checked (staleLeaders, for lease) and the work
// stream's leader holds another job at the sequence of d. A replicated 2.9 consumer can lead from
// a replica that missed jobs after a pause of the stream's leader and numbered the later ones
// differently (seen in the fault suite: two jobs missed, each later job two sequences early); its
// deliveries then carry sequences that are other jobs' on the other replicas, and an ack (or a
// TERM) of one removes the other job there, which is lost. Such a delivery is neither run nor
// settled (see Start and bury). For a delivery received by take, the consumer's leader is then
// asked to step down (see stepDown), at most once per eight leases, and only for a delivery that
// arrived after the last such request (one prefetched before it may come from the leader that was
// replaced): a leader whose replica has the jobs delivers them at their own sequences. A step-down
// is unrest, and the unrest it causes (the new leader seen, the pull's heartbeats missed) keeps
// deliveries checked for four leases after it; eight leases apart, the window can close between
// two requests, so that a stream leader that is itself the stale server (every delivery then looks
// misnumbered) holds jobs back until unrest the backend did not cause has stopped for four leases,
// not for ever. A sequence that holds no job (the job was acked since, or moved: see requeue), or
// a look-up that fails, reports false, and the job runs: its ack removes no other job. The look-up
// has a quarter of the call timeout, so that the caller's requests have time left after one not
// answered. The work stream is made without direct gets: its leader answers the look-up.
func (b *Backend) misnumbered(ctx context.Context, d *driver.Delivery, lease time.Duration) bool {
	if !b.staleLeaders(lease) {
		return false
	}
	lctx, cancel := context.WithTimeout(ctx, b.o.callTimeout/4)
	defer cancel()
	raw, err := b.work.GetMsg(lctx, d.Seq)
	if err != nil {
		if !errors.Is(err, natsjs.ErrMsgNotFound) {
			_ = b.fail(lctx, "look up "+d.ID, err) // notes an unanswered request (see staleRun)
		}
		return false
	}
	if raw.Header.Get(hdrID) == d.ID {
		return false
	}
	now, last := time.Now(), b.misDown.Load()
	arrived := d.Token.(*delivered).arrived // zero for a delivery not received by take
	if !arrived.IsZero() && arrived.UnixNano() > last && now.UnixNano() >= last+int64(8*b.ackWait()) &&
		b.misDown.CompareAndSwap(last, now.UnixNano()) {
		if b.stepDown(ctx) == nil { // a failure leaves it to a delivery eight leases later
			b.misDown.Store(time.Now().UnixNano()) // what arrives later comes from a new leader
		}
	}
	return true
}

// remove deletes the job of d from the work stream if it is still there.
func (b *Backend) remove(ctx context.Context, d *driver.Delivery) error {
	stored, err := b.stored(ctx, d)
	if err != nil || !stored {
		return err
	}
	if err := b.work.DeleteMsg(ctx, d.Seq); err != nil && !gone(err) {
		return b.fail(ctx, "remove "+d.ID, err)
	}
	return nil
}

// hdrSeq is the dead-letter header with the stream sequence the job had in the work stream.
const hdrSeq = "Corral-Seq"

// keyFree reports whether the job of d is the oldest stored job of its key. An older job that
// the backend's records show settled is deleted, and the look-up goes on. The records are read
// only on the 4th, 12th, 20th... delivery of d, so that a key busy for a good reason costs one
// request per skip.
func (b *Backend) keyFree(ctx context.Context, d *driver.Delivery) (bool, error) {
	tok := d.Token.(*delivered)
	for range 8 {
		head, err := b.work.GetMsg(ctx, 0, natsjs.WithGetMsgSubject(b.keySubjects(d.Key)))
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			return true, nil
		}
		if err != nil {
			return false, b.fail(ctx, "head of key "+d.Key, err)
		}
		if head.Sequence == d.Seq {
			return true, nil
		}
		if tok.n < 4 || tok.n%8 != 4 {
			return false, nil
		}
		// The consumer is delivering d, a later job of the key, again and again: it would
		// have delivered the head again too, if it still tracked it.
		settled, err := b.settled(ctx, head.Sequence, head.Header.Get(hdrID), true)
		if err != nil || !settled {
			return false, err
		}
		if err := b.work.DeleteMsg(ctx, head.Sequence); err != nil && !gone(err) {
			return false, b.fail(ctx, "remove a settled job", err)
		}
		b.resurrected.Add(1)
	}
	return false, nil
}

// sweepMax bounds the jobs one sweep looks at.
const sweepMax = 10_000

// sweep deletes the settled jobs the consumer no longer tracks, and publishes again the jobs it
// skipped (see above), given the work stream's and the consumer's info, and reports whether it
// removed any from their sequence. b.statsMu held.
func (b *Backend) sweep(ctx context.Context, wi *natsjs.StreamInfo, ci *natsjs.ConsumerInfo) (bool, error) {
	mode, budget, err := b.sweepMode(ctx, wi, ci)
	if err != nil {
		return false, err
	}
	removed := false
	for seq, n := wi.State.FirstSeq, 0; budget > 0 && seq <= ci.Delivered.Stream && n < sweepMax; n++ {
		raw, err := b.statWork.GetMsg(ctx, seq, natsjs.WithGetMsgSubject(b.jobPrefix+">"))
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return removed, b.fail(ctx, "sweep", err)
		}
		if raw.Sequence > ci.Delivered.Stream {
			break
		}
		seq = raw.Sequence + 1
		moved, err := b.sweepOne(ctx, wi, ci, raw, mode)
		if err != nil {
			return removed, err
		}
		removed = removed || moved > 0
		budget -= int64(moved)
	}
	return removed, nil
}

// sweepMode says which stored jobs that the consumer has delivered sweep looks at, and what it
// does with one that is not settled.
type sweepMode int

const (
	sweepOrphans sweepMode = iota // the stream holds more than the consumer tracks: delete the settled
	sweepIdle                     // nothing ack pending: none is tracked; move the ones not started
	sweepStalled                  // see stalled: move the ones not started and not handed back
)

// sweepMode returns what sweep does with wi and ci, and how many jobs it removes at most (zero:
// nothing to do). A sweep that may move jobs claims it first (see claimSweep). b.statsMu held.
func (b *Backend) sweepMode(ctx context.Context, wi *natsjs.StreamInfo, ci *natsjs.ConsumerInfo) (sweepMode, int64, error) {
	stalled := b.stalled(ci)
	orphans := int64(wi.State.Msgs) - int64(ci.NumPending) - int64(ci.NumAckPending)
	delivered := int64(wi.State.Msgs) - int64(ci.NumPending)
	mode, budget := sweepOrphans, orphans
	switch calm := b.calm(ci.Config.AckWait); {
	case ci.NumAckPending == 0 && orphans > 0 && calm:
		mode = sweepIdle
	case stalled && calm && delivered > 0 && delivered <= stalledMax:
		mode, budget = sweepStalled, delivered
	}
	if mode == sweepOrphans {
		return mode, budget, nil
	}
	if claimed, err := b.claimSweep(ctx); err != nil || !claimed {
		return sweepOrphans, orphans, err
	}
	return mode, budget, nil
}

// sweepSubject is the subject, in the state stream, of the claim of a sweep that moves jobs.
func (b *Backend) sweepSubject() string { return b.statePrefix + "sweep" }

// claimSweep reports whether this process may move the jobs the consumer skipped, for a call
// timeout: it writes the claim's end (by its clock) at sweepSubject, compare-and-set, unless
// another process's claim has not ended. Two processes moving a key's jobs at once could put a
// later job before an earlier one.
func (b *Backend) claimSweep(ctx context.Context) (bool, error) {
	var last uint64
	raw, err := b.state.GetLastMsgForSubject(ctx, b.sweepSubject())
	switch {
	case err == nil:
		end, perr := strconv.ParseInt(string(raw.Data), 10, 64)
		if perr == nil && time.Now().UnixNano() < end {
			return false, nil
		}
		last = raw.Sequence
	case !errors.Is(err, natsjs.ErrMsgNotFound):
		return false, b.fail(ctx, "claim the sweep", err)
	}
	end := strconv.FormatInt(time.Now().Add(b.o.callTimeout).UnixNano(), 10)
	_, err = b.js.Publish(ctx, b.sweepSubject(), []byte(end), natsjs.WithExpectLastSequencePerSubject(last))
	switch apiCode(err) {
	case 0:
		if err != nil {
			return false, b.fail(ctx, "claim the sweep", err)
		}
		return true, nil
	case codeWrongLast, codeWrongLR:
		return false, nil
	}
	return false, b.fail(ctx, "claim the sweep", err)
}

// stalledMax bounds the stored jobs a sweep of a stalled consumer looks at.
const stalledMax = 100

// stalled reports whether the consumer, with jobs ack pending and pull requests waiting for
// more, delivered nothing for two leases, as this process saw its count of deliveries in the
// info read by Stats and idle Receives; true at most once per lease. A job ack pending whose
// lease ended would have gone to a waiting request: every job it still tracks is being run
// (with its lease renewed) or was handed back with a delay. b.statsMu held.
func (b *Backend) stalled(ci *natsjs.ConsumerInfo) bool {
	now := time.Now()
	if ci.Delivered.Consumer != b.stallSeq || b.stallSince.IsZero() {
		b.stallSeq, b.stallSince = ci.Delivered.Consumer, now
		return false
	}
	lease := ci.Config.AckWait
	if ci.NumAckPending == 0 || ci.NumWaiting == 0 || now.Sub(b.stallSince) <= 2*lease || now.Before(b.stallNext) {
		return false
	}
	b.stallNext = now.Add(lease)
	return true
}

// sweepOne deals with raw, a stored job the consumer has delivered, as mode says: it deletes it
// if it was settled, or moves it to a new sequence (see requeue). It returns how many jobs it
// removed from their sequence.
func (b *Backend) sweepOne(ctx context.Context, wi *natsjs.StreamInfo, ci *natsjs.ConsumerInfo, raw *natsjs.RawStreamMsg, mode sweepMode) (int, error) {
	id := raw.Header.Get(hdrID)
	// With pull requests waiting, the consumer has nothing to deliver: a job it still
	// tracked whose lease ended would have gone to one of them.
	settled, err := b.settledAbove(ctx, raw.Sequence, id, b.ackFloor(ci), ci.NumWaiting > 0)
	if err != nil {
		return 0, err
	}
	if settled {
		if err := b.statWork.DeleteMsg(ctx, raw.Sequence); err != nil && !gone(err) {
			return 0, b.fail(ctx, "remove a settled job", err)
		}
		b.resurrected.Add(1)
		return 1, nil
	}
	switch mode {
	case sweepIdle:
		return b.requeue(ctx, wi, raw)
	case sweepStalled:
		marks, err := b.marksOf(ctx, id)
		if err != nil || len(marks) > 0 {
			return 0, err // handed back with a delay, perhaps: the consumer tracks it
		}
		return b.requeue(ctx, wi, raw)
	}
	return 0, nil
}

// requeue moves raw, a stored job that the consumer skipped and that was neither settled nor
// started (see above), to a new sequence of the work stream, with every later stored job of
// its ordering key after it, in their order; it reports how many jobs it moved. It moves none
// when one of them has a state record (a run of it may be in progress), when there are more
// than requeueChainMax, or when the stream has no room for them beside the jobs it holds (the
// next sweep tries again). Should the stream fill up between the two, the jobs not moved yet
// would run before the ones moved.
func (b *Backend) requeue(ctx context.Context, wi *natsjs.StreamInfo, raw *natsjs.RawStreamMsg) (int, error) {
	chain, err := b.keyChain(ctx, raw)
	if err != nil || chain == nil {
		return 0, err
	}
	if b.cfg.Capacity > 0 && int(wi.State.Msgs)+len(chain) > b.cfg.Capacity {
		return 0, nil
	}
	for _, m := range chain {
		if _, rec, err := b.loadState(ctx, m.Sequence, m.Header.Get(hdrID)); err != nil || rec != 0 {
			return 0, err
		}
	}
	for i, m := range chain {
		if ok, err := b.requeueCopy(ctx, m); err != nil || !ok {
			return i, err
		}
		if err := b.statWork.DeleteMsg(ctx, m.Sequence); err != nil && !gone(err) {
			return i, b.fail(ctx, "requeue "+m.Header.Get(hdrID), err)
		}
		b.requeued.Add(1)
	}
	return len(chain), nil
}

// requeueChainMax bounds the jobs requeue moves at once.
const requeueChainMax = 100

// keyChain returns raw and, if it has an ordering key, every later stored job of its key, in
// order; nil if they are more than requeueChainMax.
func (b *Backend) keyChain(ctx context.Context, raw *natsjs.RawStreamMsg) ([]*natsjs.RawStreamMsg, error) {
	chain := []*natsjs.RawStreamMsg{raw}
	key := raw.Header.Get(hdrKey)
	for seq := raw.Sequence + 1; key != ""; {
		next, err := b.statWork.GetMsg(ctx, seq, natsjs.WithGetMsgSubject(b.keySubjects(key)))
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, b.fail(ctx, "requeue "+raw.Header.Get(hdrID), err)
		}
		if len(chain) == requeueChainMax {
			return nil, nil
		}
		chain = append(chain, next)
		seq = next.Sequence + 1
	}
	return chain, nil
}

// requeueCopy publishes raw again on its subject, on the condition that raw is still the last
// message there (or a copy follows it already), and reports whether the copy is stored: false
// when the stream is full.
func (b *Backend) requeueCopy(ctx context.Context, raw *natsjs.RawStreamMsg) (bool, error) {
	// The broker's own headers stay behind: the job's Nats-Msg-Id would make the copy a
	// duplicate of the job itself.
	h := nats.Header{}
	for k, v := range raw.Header {
		if !strings.HasPrefix(k, "Nats-") {
			h[k] = v
		}
	}
	msg := &nats.Msg{Subject: raw.Subject, Header: h, Data: raw.Data}
	_, err := b.js.PublishMsg(ctx, msg, natsjs.WithExpectLastSequencePerSubject(raw.Sequence))
	switch apiCode(err) {
	case 0:
		if err != nil {
			return false, b.fail(ctx, "requeue "+raw.Header.Get(hdrID), err)
		}
	case codeWrongLast, codeWrongLR: // a copy is there already: a process stopped before the deletion
	case codeFull:
		return false, nil
	default:
		return false, b.fail(ctx, "requeue "+raw.Header.Get(hdrID), err)
	}
	return true, nil
}

// calm reports whether this backend saw no unrest (see staleRun) for two leases, and no
// reconnection for four (see suspect; on a queue replicated on a 2.9 server, no unrest for
// four): a restarted 2.9 server delivers again, seconds after it serves, jobs that its
// consumer's info counts as neither pending nor ack pending (seen in the fault suite).
func (b *Backend) calm(lease time.Duration) bool {
	return !b.suspect(lease) && time.Since(time.Unix(0, b.unrest.Load())) > 2*lease
}

// tombstoneAge is how long the records of acked jobs are kept for a 2.9 server.
const tombstoneAge = 10 * time.Minute

// tombstone records that the job of d was acked, on a 2.9 server, and reports whether it did
// (true on a later server, which needs none). A failure is not the ack's: the job is acked; it
// is only not protected from a resurrection.
func (b *Backend) tombstone(ctx context.Context, d *driver.Delivery) bool {
	if !b.tombstones {
		return true
	}
	_, err := b.js.Publish(ctx, b.tombstoneSubject(d.Seq, d.ID), nil)
	return err == nil
}

// staleRun reports whether the job's state record shows a run whose lease ended more than
// twice the consumer's lease ago, and more than twice the lease after the last unrest this
// backend saw: a consumer that still tracked the job would have delivered it again by then,
// and the Start of that delivery would have moved the lease on (a Nack clears it). It is the
// record of a job whose ack took effect and whose removal did not. An error reading the
// record says nothing.
func (b *Backend) staleRun(ctx context.Context, seq uint64, id string) bool {
	ackWait := b.ackWait()
	if ackWait <= 0 {
		return false
	}
	calm := time.Unix(0, b.unrest.Load())
	if time.Since(calm) <= 2*ackWait {
		return false
	}
	st, _, err := b.loadState(ctx, seq, id)
	return err == nil && !st.Until.IsZero() && time.Since(st.Until) > 2*ackWait
}

// tombstoneSubject is the subject of the tombstone of the job with id at sequence seq: both,
// since a 2.9 server can give a lost message's sequence to another job.
func (b *Backend) tombstoneSubject(seq uint64, id string) string {
	return b.donePrefix + strconv.FormatUint(seq, 10) + "." + token(id)
}

// entombed reports whether the job with id at sequence seq of the work stream has a tombstone:
// it was acked. Always false on a server of 2.10 or later, which keeps none.
func (b *Backend) entombed(ctx context.Context, seq uint64, id string) (bool, error) {
	if !b.tombstones {
		return false, nil
	}
	_, err := b.done.GetLastMsgForSubject(ctx, b.tombstoneSubject(seq, id))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, b.fail(ctx, "tombstone of "+id, err)
	}
	return true, nil
}

// settledBefore reports, for the Start of d that has just written the job's state record,
// whether another delivery of the job was acked before it: where the broker may have
// delivered it again after an ack (see suspect), the job must still be stored (a queue of one
// replica) or have no tombstone (a replicated queue on a 2.9 server). Starts are serialised by
// the record, and while deliveries are checked Ack writes the tombstone before it returns, and
// before it drops the record.
func (b *Backend) settledBefore(ctx context.Context, d *driver.Delivery, ackWait time.Duration) (bool, error) {
	switch {
	case b.mayHaveForgotten(ackWait):
		stored, err := b.stored(ctx, d)
		return !stored && err == nil, err
	case b.staleLeaders(ackWait):
		return b.entombed(ctx, d.Seq, d.ID)
	}
	return false, nil
}

// settled reports whether the job with id at sequence seq of the work stream was settled:
// acked (at or below the consumer's ack floor, or with a tombstone) or dead-lettered from that
// sequence.
func (b *Backend) settled(ctx context.Context, seq uint64, id string, stale bool) (bool, error) {
	if b.floorless() {
		return b.settledAbove(ctx, seq, id, 0, stale)
	}
	b.statsMu.Lock()
	ci, err := b.statCons.Info(ctx)
	b.statsMu.Unlock()
	if err != nil {
		return false, b.fail(ctx, "consumer info", err)
	}
	b.noteLeader(ci)
	return b.settledAbove(ctx, seq, id, b.ackFloor(ci), stale)
}

// ackFloor returns the consumer's ack floor in ci, taken as proof that the jobs at or below
// it were acked; on a queue replicated on a 2.9 server, 0, no proof: such a consumer moves its
// floor to the last sequence it delivered whenever nothing is ack pending, past a job it
// skipped (nats-server#6566) and never delivered. The tombstones are the proof there.
func (b *Backend) ackFloor(ci *natsjs.ConsumerInfo) uint64 {
	if b.floorless() {
		return 0
	}
	return ci.AckFloor.Stream
}

// floorless reports whether the consumer's ack floor is no proof of an ack (see ackFloor).
func (b *Backend) floorless() bool { return b.tombstones && b.o.replicas > 1 }

// settledAbove is settled with the consumer's ack floor known. stale says whether a stale run
// (see staleRun) counts: only for a job the consumer would have delivered by now if it still
// tracked it, never for one it is delivering.
func (b *Backend) settledAbove(ctx context.Context, seq uint64, id string, floor uint64, stale bool) (bool, error) {
	if seq <= floor {
		return true, nil
	}
	if stale && b.staleRun(ctx, seq, id) {
		return true, nil
	}
	if acked, err := b.entombed(ctx, seq, id); acked || err != nil {
		return acked, err
	}
	raw, err := b.lastDead(ctx, "dead letter of", id)
	if errors.Is(err, driver.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return raw.Header.Get(hdrSeq) == strconv.FormatUint(seq, 10), nil
}

// Resurrected returns how many settled jobs this backend found back in the work stream (see
// resurrect.go) and removed.
func (b *Backend) Resurrected() uint64 {
	calls.Made(b.js != nil)
	return b.resurrected.Load()
}

// Requeued returns how many jobs that the consumer had skipped this backend published again
// (see resurrect.go).
func (b *Backend) Requeued() uint64 {
	calls.Made(b.js != nil)
	return b.requeued.Load()
}

// gone reports whether err, from deleting a message, says it was not there: another process
// deleted it first.
func gone(err error) bool {
	return errors.Is(err, natsjs.ErrMsgNotFound) || apiCode(err) == codeNoMessage ||
		apiCode(err) == codeDeleteFailed && strings.Contains(err.Error(), "no message found")
}

const codeDeleteFailed natsjs.ErrorCode = 10057 // message deletion unsuccessful (with the reason)

// suspect reports whether deliveries must be checked against the records of settled jobs: for
// four times the lease after the client reconnected (to a restarted server, perhaps), and, on a
// queue replicated on a 2.9 server, after the broker failed to answer or the consumer changed
// leaders. A 2.9 consumer leader that was paused, and is continued after the others elected a
// new one, goes on delivering for a moment from its old state: jobs acked since, which would
// start again at attempt 1 once their records were dropped. Their tombstones show them settled.
func (b *Backend) suspect(lease time.Duration) bool {
	n := b.nc.Stats().Reconnects
	now := time.Now()
	if n != b.reconnSeen.Load() {
		b.reconnSeen.Store(n)
		b.suspectUntil.Store(now.Add(4 * lease).UnixNano())
	}
	if b.floorless() && now.UnixNano() < b.shaken.Load()+int64(4*lease) {
		return true
	}
	return now.UnixNano() < b.suspectUntil.Load()
}

// staleLeaders reports whether deliveries are checked (see suspect) on a queue replicated on a
// 2.9 server: a leader may deliver from its old state, and an ack's tombstone is what shows
// the job settled.
func (b *Backend) staleLeaders(lease time.Duration) bool {
	return b.floorless() && b.suspect(lease)
}

// Reconnects implements driver.Reconnecter: the reconnections of the NATS connection since it
// was made.
func (b *Backend) Reconnects() uint64 {
	calls.Made(b.js != nil)
	return b.nc.Stats().Reconnects
}
