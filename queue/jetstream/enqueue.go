package jetstream

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/driver"
)

// Enqueue implements driver.Backend. The job is published to corral.<name>.job.<key>.<id> with
// "no message on this subject" as a precondition (so an ID is taken while its job is stored)
// and, when the queue has a dedup horizon, the job ID as Nats-Msg-Id (so it stays taken for the
// horizon). At capacity the broker refuses the message and the overflow policy decides: Block
// retries until ctx ends, Reject and DropNewest fail, DropOldest dead-letters the oldest job
// waiting for delivery and retries.
//
// A publish not confirmed within the call timeout fails with an error matching
// queue.ErrUnavailable: the broker may have stored the job. Enqueued again with the same ID, it
// is then refused with queue.ErrDuplicate, whether the queue has a dedup horizon or not (the
// job is stored under its ID); a job that was stored and already handled in between is caught
// only within the dedup horizon.
func (b *Backend) Enqueue(ctx context.Context, m driver.Message) (driver.EnqueueResult, error) {
	var res driver.EnqueueResult
	if err := b.life.Check(calls); err != nil {
		return res, err
	}
	if m.EnqueuedAt.IsZero() {
		m.EnqueuedAt = time.Now()
	}
	msg := &nats.Msg{Subject: b.jobSubject(m.Key, m.ID), Header: jobHeader(&m), Data: m.Body}
	popts := []natsjs.PublishOpt{natsjs.WithExpectLastSequencePerSubject(0)}
	if b.cfg.DedupHorizon > 0 {
		popts = append(popts, natsjs.WithMsgID(m.ID))
	}
	if m.Unique != "" {
		return b.enqueueUnique(ctx, msg, &m, popts)
	}
	return b.enqueueMsg(ctx, msg, &m, popts)
}

// enqueueUnique is Enqueue of m, with a unique key: the key is claimed first, and freed
// again if m is refused.
func (b *Backend) enqueueUnique(ctx context.Context, msg *nats.Msg, m *driver.Message, popts []natsjs.PublishOpt) (driver.EnqueueResult, error) {
	rctx, cancel := b.req(ctx)
	holder, err := b.claimUnique(rctx, m)
	cancel()
	switch {
	case err != nil:
		return driver.EnqueueResult{}, err
	case holder == m.ID:
		return driver.EnqueueResult{}, driver.ErrDuplicate
	case holder != "":
		return driver.EnqueueResult{Existing: holder}, driver.ErrNotUnique
	}
	res, err := b.enqueueMsg(ctx, msg, m, popts)
	if err != nil && !errors.Is(err, driver.ErrUnavailable) { // unavailable: it may be stored
		rctx, cancel := b.req(context.WithoutCancel(ctx))
		b.releaseUnique(rctx, m)
		cancel()
	}
	return res, err
}

// enqueueMsg publishes msg, the job m, applying the overflow policy.
func (b *Backend) enqueueMsg(ctx context.Context, msg *nats.Msg, m *driver.Message, popts []natsjs.PublishOpt) (driver.EnqueueResult, error) {
	var res driver.EnqueueResult
	poll := blockPolls.Sequence()
	for {
		full, err := b.publishJob(ctx, msg, m, popts)
		if !full {
			return res, err
		}
		if err := b.cfg.Overflow.Refusal(); err != nil {
			return res, err
		}
		if b.cfg.Overflow == driver.DropOldest {
			if err := b.dropOldest(ctx, &res); err != nil {
				return res, err
			}
			continue
		}
		// Block: poll with a capped backoff.
		if !calls.Sleep(ctx, poll.Next()) {
			return res, context.Cause(ctx)
		}
	}
}

// blockPolls is how often Enqueue asks again for room in a full queue with the Block policy
// (the broker has no "wait for room"): 1ms after the first refusal, doubling up to every 50ms.
var blockPolls = backoff.Exponential(time.Millisecond, 2, 50*time.Millisecond)

// publishJob publishes msg, the job m, once. It reports whether the broker refused it because
// the queue is full (the overflow policy decides what next), else returns the outcome of
// Enqueue.
func (b *Backend) publishJob(ctx context.Context, msg *nats.Msg, m *driver.Message, popts []natsjs.PublishOpt) (full bool, err error) {
	rctx, cancel := b.req(ctx)
	defer cancel()
	ack, err := b.js.PublishMsg(rctx, msg, popts...)
	if err == nil {
		if ack.Duplicate {
			return false, driver.ErrDuplicate
		}
		if time.Until(m.NotBefore) > 10*time.Millisecond {
			// A consumer that takes the job before its start time removes this marker
			// when the job comes back.
			err = b.mark(rctx, m.ID, markWaiting)
		}
		return false, err
	}
	switch apiCode(err) {
	case codeWrongLast, codeWrongLR:
		return false, driver.ErrDuplicate
	case codeFull:
		return true, nil
	}
	return false, b.fail(ctx, "enqueue "+m.ID, err)
}

// dropOldest makes room for a job under the DropOldest policy: it evicts the oldest job
// waiting for delivery and records it, and the dead letters evicted to make room for it, in
// res. It fails with queue.ErrFull if every stored job is being handled (or the one it took
// cannot be buried safely: see misnumbered).
func (b *Backend) dropOldest(ctx context.Context, res *driver.EnqueueResult) error {
	id, evicted, err := b.evictOldest(ctx)
	res.DeadEvicted = append(res.DeadEvicted, evicted...)
	if err != nil {
		return err
	}
	if id == "" {
		return driver.ErrFull
	}
	res.Evicted = append(res.Evicted, id)
	return nil
}

// Fetching the oldest job to evict: a fetch waits evictFetchWait for it, and is tried again
// at most evictRefetches times while the consumer says it has jobs not yet delivered (so that
// a server slow to hand one out cannot hold Enqueue for more than about two seconds).
const (
	evictFetchWait = 100 * time.Millisecond
	evictRefetches = 20
)

// evictOldest takes the oldest job waiting for delivery from the consumer (so that no worker
// can be handed it meanwhile), writes it to the dead letters with reason evicted and removes
// it. It returns "" if no job is waiting, or if the job it took cannot be buried safely (see
// misnumbered; it is handed back), and the dead letters evicted to make room for it.
func (b *Backend) evictOldest(ctx context.Context) (string, []string, error) {
	victim, err := b.oldestWaiting(ctx)
	if victim == nil || err != nil {
		return "", nil, err
	}
	rctx, cancel := b.req(ctx)
	defer cancel()
	d, err := b.delivery(rctx, victim)
	if err != nil {
		return "", nil, err
	}
	now := time.Now()
	a := driver.Attempt{Start: now, End: now, Error: driver.ErrEvicted.Error()}
	evicted, err := b.bury(rctx, d, driver.ReasonEvicted, a)
	if errors.Is(err, driver.ErrLeaseLost) {
		// Not buried (see misnumbered): handed back, which removes nothing, and no job is
		// evicted (dropOldest fails with queue.ErrFull).
		_ = b.skip(rctx, d, 0, markReady)
		return "", evicted, nil
	}
	if err != nil {
		return "", evicted, err
	}
	if d.Token.(*delivered).marked {
		if err := b.unmark(rctx, d.ID); err != nil {
			return "", evicted, err
		}
	}
	return d.ID, evicted, nil
}

// oldestWaiting takes the oldest job waiting for delivery, from this process's prefetch or
// from the consumer, or returns nil if every stored job is being handled.
func (b *Backend) oldestWaiting(ctx context.Context) (natsjs.Msg, error) {
	// A job prefetched but not handed out is not leased, and older than any job the consumer
	// has not delivered yet: evict it first.
	if victim := b.takePrefetched(); victim != nil {
		return victim, nil
	}
	b.mu.Lock()
	cons, p := b.cons, b.pump // replaced by pumpFor, under b.mu
	b.mu.Unlock()
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		victim, err := fetchOne(cons)
		if err != nil {
			return nil, b.fail(ctx, "evict", err)
		}
		if victim != nil {
			return victim, nil
		}
		// Nothing came: either every stored job is leased, or on its way to this process's
		// prefetch, or the fetch was too slow. The consumer's counts tell which (asked
		// through the handle kept for such queries: see statCons).
		rctx, cancel := b.req(ctx)
		b.statsMu.Lock()
		info, err := b.statCons.Info(rctx)
		b.statsMu.Unlock()
		cancel()
		if err != nil {
			return nil, b.fail(ctx, "evict", err)
		}
		if info.NumPending > 0 && try < evictRefetches {
			continue
		}
		if info.NumAckPending == 0 || p == nil {
			return nil, nil
		}
		// Delivered: perhaps to this process's prefetch, where it is not leased yet but
		// may not have arrived (on a busy machine, a while after the broker sent it).
		// Wait for it as long as a request may take.
		return b.awaitPrefetched(ctx, p), nil
	}
}

// fetchOne fetches the next message cons has not delivered, or returns nil if none came within
// evictFetchWait.
func fetchOne(cons natsjs.Consumer) (natsjs.Msg, error) {
	// Not FetchNoWait: the server may answer "no messages" for a job published an
	// instant ago, before the consumer has seen it, or when it is slow to answer.
	batch, err := cons.Fetch(1, natsjs.FetchMaxWait(evictFetchWait))
	if err != nil {
		return nil, err
	}
	var victim natsjs.Msg
	for m := range batch.Messages() {
		victim = m
	}
	if err := batch.Error(); err != nil && victim == nil {
		return nil, err
	}
	return victim, nil
}

// awaitPrefetched waits up to the call timeout for a message to arrive in p's buffer, and takes
// it (nil if none came).
func (b *Backend) awaitPrefetched(ctx context.Context, p *pump) natsjs.Msg {
	t := time.NewTimer(b.o.callTimeout)
	defer t.Stop()
	select {
	case a := <-p.buf:
		if a.fresh {
			b.bufFresh.Add(-1)
		}
		return a.msg
	case <-t.C:
	case <-p.stopping:
	case <-ctx.Done():
	}
	return nil
}

// takePrefetched takes the oldest message from the prefetch buffer, if any, so that no Receive
// hands it out.
func (b *Backend) takePrefetched() natsjs.Msg {
	b.mu.Lock()
	p := b.pump
	b.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case a := <-p.buf:
		if a.fresh {
			b.bufFresh.Add(-1)
		}
		return a.msg
	default:
		return nil
	}
}
