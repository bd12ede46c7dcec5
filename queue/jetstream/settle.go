package jetstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/queue/driver"
)

func (b *Backend) token(d *driver.Delivery) (*delivered, error) {
	calls.Made(b.js != nil)
	tok, ok := d.Token.(*delivered)
	if !ok || tok == nil {
		return nil, errors.New("jetstream: delivery not from this backend")
	}
	return tok, nil
}

// localLeaseEnd is when this process stops trusting a lease of length lease that the broker
// started no earlier than start: a little before the broker's own end, so that a delivery the
// broker may already have given to someone else is never settled (it returns ErrLeaseLost).
// The margin, a tenth of the lease up to a second, costs nothing to a consumer that renews
// its leases long before they end.
func localLeaseEnd(start time.Time, lease time.Duration) time.Time {
	return start.Add(lease - leaseMargin(lease))
}

// leaseMargin is how long before a lease of length lease ends this process stops trusting it
// (see localLeaseEnd).
func leaseMargin(lease time.Duration) time.Duration {
	return min(lease/10, time.Second)
}

// leased returns d's token, if its lease has not ended, and the context of the requests a
// call on d makes (see req); the caller calls cancel, which is never nil.
func (b *Backend) leased(ctx context.Context, d *driver.Delivery) (tok *delivered, rctx context.Context, cancel context.CancelFunc, err error) {
	if tok, err = b.token(d); err != nil {
		return nil, nil, func() {}, err
	}
	tok.mu.Lock()
	end := tok.leaseEnd
	tok.mu.Unlock()
	if !time.Now().Before(end) {
		return nil, nil, func() {}, driver.ErrLeaseLost
	}
	rctx, cancel = b.req(ctx)
	return tok, rctx, cancel, nil
}

// Extend implements driver.Backend with InProgress, which restarts the broker's lease at the
// consumer's AckWait (the lease of Receive) whatever lease is asked for. The lease of a started
// run in the job's state record moves on with it, and a job not started yet gets a record of the
// delivery's lease (see jobState.Held); that write finds an operator's cancel of the job, and
// Extend then returns queue.ErrCanceled (see admin.go).
func (b *Backend) Extend(ctx context.Context, d *driver.Delivery, lease time.Duration) error {
	tok, ctx, cancel, err := b.leased(ctx, d)
	defer cancel()
	if err != nil {
		return err
	}
	ackWait := b.ackWait()
	start := time.Now() // the broker restarts its lease after this
	tok.stMu.Lock()
	defer tok.stMu.Unlock()
	if tok.st.Canceled { // found by an earlier call on d
		return driver.ErrCanceled
	}
	// Written before the +WPI, so that the record's lease ends before the broker's. A job not
	// started yet (waiting for a rate limit's start, or a Share's slot) gets a record too, so
	// that a sweep does not take it for one the consumer skipped (see requeue).
	if tok.started {
		tok.st.Until = start.Add(ackWait)
	} else {
		tok.st.Held = start.Add(ackWait)
	}
	if err := b.saveState(ctx, d, tok); err != nil {
		return err
	}
	if err := b.ack(ctx, tok.msg, "+WPI"); err != nil {
		return err
	}
	tok.mu.Lock()
	tok.leaseEnd = localLeaseEnd(start, min(lease, ackWait))
	tok.mu.Unlock()
	return nil
}

// Start implements driver.Backend: it counts the attempt in the job's state record (written
// compare-and-set, with the run's lease end), so that the attempt is spent even if the process
// dies in the handler, and a job that was only prefetched spends none. A record that another
// delivery of the job wrote meanwhile, or a run of another delivery whose lease has not ended
// (a crashed broker can redeliver a job that is still being handled), makes Start return
// queue.ErrLeaseLost: the job is not started twice at once. A record an operator's Cancel wrote
// makes it return queue.ErrCanceled. While deliveries are checked on a queue replicated on a
// 2.9 server, a delivery whose sequence holds another job on the work stream's leader makes it
// return queue.ErrLeaseLost too, with no record written and the job not settled (see
// misnumbered).
func (b *Backend) Start(ctx context.Context, d *driver.Delivery) error {
	tok, ctx, cancel, err := b.leased(ctx, d)
	defer cancel()
	if err != nil {
		return err
	}
	ackWait := b.ackWait()
	tok.stMu.Lock()
	defer tok.stMu.Unlock()
	now := time.Now()
	if now.Before(tok.st.Until.Add(-leaseMargin(ackWait))) {
		return driver.ErrLeaseLost
	}
	if b.misnumbered(ctx, d, ackWait) {
		return driver.ErrLeaseLost
	}
	st := tok.st
	tok.st.Starts++
	tok.st.Until, tok.st.Started, tok.st.Next, tok.st.Held = now.Add(ackWait), now, time.Time{}, time.Time{}
	if err := b.saveState(ctx, d, tok); err != nil {
		if !errors.Is(err, driver.ErrCanceled) {
			tok.st = st
		}
		return err
	}
	// After a reconnection or a change of leaders, another delivery of the job may have been
	// acked, and its record dropped, before this one wrote it (see resurrect.go). A check that
	// fails says nothing: the attempt is counted, and the job runs.
	if settled, err := b.settledBefore(ctx, d, ackWait); err == nil && settled {
		_ = b.dropState(ctx, d, tok)
		return driver.ErrLeaseLost
	}
	tok.started = true
	return nil
}

// Ack implements driver.Backend: the broker removes the job, and confirms it, before Ack returns.
// The removal of the job's state record (and, on a server older than 2.10, its tombstone)
// follows in the background, a few requests at a time, and Close waits for it; on a state stream
// with per-message TTLs, Ack publishes the removal itself, without waiting for an answer, and
// Close waits for one more removal's answer (see aftermath.go). Ack makes them itself, before it
// returns, when 4096 acked jobs already wait for them, and, on a queue of one replica, for four
// leases after a reconnection; on a queue replicated on a 2.9 server, while deliveries are
// checked (see resurrect.go), it writes the tombstone before it returns.
func (b *Backend) Ack(ctx context.Context, d *driver.Delivery) error {
	tok, rctx, cancel, err := b.leased(ctx, d)
	defer cancel()
	if err != nil {
		return err
	}
	ackErr := tok.msg.DoubleAck(rctx)
	ackWait := b.ackWait()
	if b.mayHaveForgotten(ackWait) {
		// The server may have lost track of this delivery, and then it confirms its ack
		// without applying it, or never answers (see resurrect.go): the job leaves the work
		// stream before its record is dropped.
		cancel()
		rctx, cancel = b.req(ctx)
		defer cancel()
		// A confirmed ack whose job cannot be looked up now (an election under way) stands.
		if err := b.remove(rctx, d); err != nil && ackErr != nil {
			return b.fail(rctx, "ack "+d.ID, ackErr)
		}
	} else if ackErr != nil {
		return b.fail(rctx, "ack "+d.ID, ackErr)
	}
	b.leaveUnique(rctx, &d.Message)
	if b.mayHaveForgotten(ackWait) {
		// Another delivery's Start must find this record until the job is surely gone
		// (see resurrect.go): no aftermath.
		b.tombstone(rctx, d)
		tok.stMu.Lock()
		defer tok.stMu.Unlock()
		return b.dropState(rctx, d, tok)
	}
	// A stale delivery's Start must find the tombstone as soon as it can find the record
	// dropped (see resurrect.go): written now, else by the aftermath.
	entombed := b.staleLeaders(ackWait) && b.tombstone(rctx, d)
	return b.afterAck(rctx, d, tok, entombed)
}

// Nack implements driver.Backend: the attempt is added to the job's state, then the broker
// redelivers the job after delay (NakWithDelay). A snooze also gives back the attempt Start
// counted, as Release does, and counts in the state's Snoozes. A job an operator cancelled is
// buried instead, with ReasonCanceled (see admin.go).
func (b *Backend) Nack(ctx context.Context, d *driver.Delivery, delay time.Duration, a driver.Attempt) error {
	tok, ctx, cancel, err := b.leased(ctx, d)
	defer cancel()
	if err != nil {
		return err
	}
	return b.buryIfCanceled(ctx, d, a, b.nack(ctx, d, tok, delay, a))
}

// nack is Nack's work, with its request context.
func (b *Backend) nack(ctx context.Context, d *driver.Delivery, tok *delivered, delay time.Duration, a driver.Attempt) error {
	tok.stMu.Lock()
	defer tok.stMu.Unlock()
	if tok.st.Canceled { // found by an earlier call on d
		return driver.ErrCanceled
	}
	tok.st.History = fillHistory(tok.st.History, d.Attempt)
	tok.st.History = append(tok.st.History, a)
	tok.st.Until, tok.st.Started, tok.st.Next = time.Time{}, time.Time{}, due(delay)
	st, started := tok.st, tok.started
	if a.Snoozed {
		if tok.started {
			tok.st.Starts--
			tok.started = false
		}
		tok.st.Snoozes++
	}
	if err := b.saveState(ctx, d, tok); err != nil {
		if !errors.Is(err, driver.ErrCanceled) { // else tok holds the cancelled record
			tok.st = st
		}
		tok.started = started
		return err
	}
	kind := markReady
	if delay > 0 {
		kind = markDelayed
	}
	if err := b.remark(ctx, tok, d.ID, kind); err != nil {
		return err
	}
	return b.ack(ctx, tok.msg, nakDelay(delay))
}

// due returns when a job handed back now with delay is due again: zero for no delay.
func due(delay time.Duration) time.Time {
	if delay <= 0 {
		return time.Time{}
	}
	return time.Now().Add(delay)
}

// fillHistory adds an entry for each attempt before attempt that left none: its handler started
// and its lease expired (its process may have died). Such entries are recorded with their
// dates as the job is taken back (see expireRun); this fills in, undated, those a record
// written by an earlier version lacks.
func fillHistory(h []driver.Attempt, attempt int) []driver.Attempt {
	have := make(map[int]bool, len(h))
	for _, a := range h {
		have[a.Number] = true
	}
	for n := 1; n < attempt; n++ {
		if !have[n] {
			h = append(h, driver.Attempt{Number: n, Error: driver.ErrLeaseExpired.Error()})
		}
	}
	if len(h) > 1 {
		slices.SortStableFunc(h, func(a, b driver.Attempt) int { return cmp.Compare(a.Number, b.Number) })
	}
	return h
}

// Release implements driver.Backend: the delivery's attempt, if Start counted one, is given back,
// the job is recorded as started in time, and it is ready again after delay (NakWithDelay). A
// job an operator cancelled is buried instead, with ReasonCanceled (see admin.go).
func (b *Backend) Release(ctx context.Context, d *driver.Delivery, delay time.Duration) error {
	tok, ctx, cancel, err := b.leased(ctx, d)
	defer cancel()
	if err != nil {
		return err
	}
	return b.buryIfCanceled(ctx, d, driver.Attempt{}, b.giveBack(ctx, d, tok, delay))
}

// giveBack is Release's work, with its request context.
func (b *Backend) giveBack(ctx context.Context, d *driver.Delivery, tok *delivered, delay time.Duration) error {
	tok.stMu.Lock()
	defer tok.stMu.Unlock()
	if tok.st.Canceled { // found by an earlier call on d
		return driver.ErrCanceled
	}
	if tok.started {
		tok.st.Starts--
		tok.started = false
	}
	tok.st.Until, tok.st.Started, tok.st.Next = time.Time{}, time.Time{}, due(delay)
	tok.st.Released = true
	if err := b.saveState(ctx, d, tok); err != nil {
		return err
	}
	if delay > 0 {
		return b.skip(ctx, d, delay, markDelayed)
	}
	return b.skip(ctx, d, 0, markReady)
}

// Bury implements driver.Backend: the job is published to the dead-letter stream with its
// reason, the handler runs it had (its state's Starts) and its attempt history (a with Number 0
// and no Error adds no entry), and only then terminated, so that a crash in between leaves a
// duplicate dead letter at worst (deduplicated by the broker for ten minutes), never a lost job.
// At the dead-letter limit, the oldest dead letters are deleted first and reported. While
// deliveries are checked on a queue replicated on a 2.9 server, a delivery not started whose
// sequence holds another job on the work stream's leader makes it return queue.ErrLeaseLost,
// with nothing buried, and the job delivered again when its lease ends (see misnumbered): its
// termination would remove the other job.
func (b *Backend) Bury(ctx context.Context, d *driver.Delivery, reason driver.Reason, a driver.Attempt) (driver.BuryResult, error) {
	_, ctx, cancel, err := b.leased(ctx, d)
	defer cancel()
	if err != nil {
		return driver.BuryResult{}, err
	}
	evicted, err := b.bury(ctx, d, reason, a)
	return driver.BuryResult{DeadEvicted: evicted}, err
}

// bury dead-letters the job of d and returns the dead letters it evicted, or
// queue.ErrLeaseLost for a delivery not started at another job's sequence (see Bury). ctx must
// have a deadline (see req).
func (b *Backend) bury(ctx context.Context, d *driver.Delivery, reason driver.Reason, a driver.Attempt) ([]string, error) {
	tok, err := b.token(d)
	if err != nil {
		return nil, err
	}
	tok.stMu.Lock()
	defer tok.stMu.Unlock()
	if !tok.started && b.misnumbered(ctx, d, b.ackWait()) {
		return nil, driver.ErrLeaseLost
	}
	hist := fillHistory(append([]driver.Attempt(nil), tok.st.History...), d.Attempt)
	if a.Number != 0 || a.Error != "" {
		hist = append(hist, a)
	}
	hj, err := json.Marshal(hist)
	if err != nil {
		return nil, err
	}
	h := jobHeader(&d.Message)
	h.Set(hdrReason, string(reason))
	h.Set(hdrAttempt, strconv.Itoa(tok.st.Starts))
	h.Set(hdrHistory, string(hj))
	h.Set(hdrSeq, strconv.FormatUint(d.Seq, 10))
	putTime(h, hdrDeadAt, time.Now())
	msg := &nats.Msg{Subject: b.deadPrefix + token(d.ID), Header: h, Data: d.Body}
	evicted, err := b.publishDead(ctx, msg, d.ID, d.Seq)
	if err != nil {
		return evicted, err
	}
	if err := b.ack(ctx, tok.msg, "+TERM"); err != nil {
		return evicted, err
	}
	b.leaveUnique(ctx, &d.Message)
	return evicted, b.dropState(ctx, d, tok)
}
