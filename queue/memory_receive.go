package queue

import (
	"container/heap"
	"context"
	"fmt"
	"time"
)

// lease puts e, leased, in m.leased in order of lease end (then of lease
// start). Leases are mostly taken, and renewed, for the same duration, so a
// new lease end is mostly the latest: the search from the tail is O(1)
// then, as is remove, where a heap would be O(log n) for both.
func (m *Memory) lease(e *entry) {
	at := m.leased.tail
	for at != nil && at.leaseEnd.After(e.leaseEnd) {
		at = at.ln[onLease].prev
	}
	m.leased.insertAfter(at, e)
}

// promote moves due delayed jobs to ready and expires leases. m.mu held.
func (m *Memory) promote(now time.Time) {
	for m.timed.Len() > 0 && !m.timed.es[0].readyAt.After(now) {
		e := heap.Pop(&m.timed).(*entry)
		e.state = stateReady
		m.ready.push(e)
	}
	for m.leased.head != nil && !m.leased.head.leaseEnd.After(now) {
		e := m.leased.head
		m.leased.remove(e)
		if e.started.Load() == e.gen {
			e.history = append(e.history, Attempt{Number: e.attempt, Start: e.leaseStart, End: now, Error: ErrLeaseExpired.Error()})
		} else {
			e.attempt-- // no handler ran on this lease: no attempt spent
		}
		e.gen++ // the lease holder's delivery is now stale
		e.state = stateReady
		m.ready.push(e)
	}
}

// next returns the earliest time something becomes ready. m.mu held.
func (m *Memory) next() time.Time {
	var t time.Time
	if m.timed.Len() > 0 {
		t = m.timed.es[0].readyAt
	}
	if m.leased.head != nil {
		if l := m.leased.head.leaseEnd; t.IsZero() || l.Before(t) {
			t = l
		}
	}
	if h := m.cfg.DedupHorizon; h > 0 && m.seen.fifo.n > 0 {
		// A waiting receiver wakes to forget expired IDs, a batch at a time, so that an
		// idle queue gives their memory back too.
		if e := m.seen.fifo.peek().at.Add(h); t.IsZero() || e.Before(t) {
			t = e
		}
	}
	return t
}

// Receive implements Backend.
func (m *Memory) Receive(ctx context.Context, lease time.Duration, d *Delivery) error {
	_, err := m.receiveAt(ctx, lease, d)
	return err
}

// receiveAt is Receive, and returns the time it read when it leased the job
// (see quickConsumer).
func (m *Memory) receiveAt(ctx context.Context, lease time.Duration, d *Delivery) (time.Time, error) {
	if lease <= 0 {
		return time.Time{}, fmt.Errorf("queue: lease %v must be positive", lease)
	}
	if m.kick == nil {
		panic(unopened)
	}
	now := m.clk.Now() // outside the lock; read again after a wait
	m.mu.Lock()
	for {
		if m.closed.Load() {
			m.mu.Unlock()
			return time.Time{}, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			// This receiver may have been woken for a job: pass it on.
			m.signal(&m.recvWait)
			m.mu.Unlock()
			return time.Time{}, context.Cause(ctx)
		}
		m.promote(now)
		if m.cfg.DedupHorizon > 0 {
			m.seen.prune(now, m.cfg.DedupHorizon)
		}
		m.drainIfIdle()
		if m.ready.len() > 0 {
			m.take(now, lease, d)
			m.mu.Unlock()
			return now, nil
		}
		m.sleepers.Add(1)
		if m.inboxLen.Load() > 0 {
			// A job came in through the inbox after promote drained it.
			m.sleepers.Add(-1)
			continue
		}
		err := m.wait(ctx, &m.recvWait, m.next(), m.kick)
		m.sleepers.Add(-1)
		if err != nil {
			m.mu.Unlock()
			return time.Time{}, err
		}
		now = m.clk.Now()
	}
}

// take leases the first ready job for lease into d, or holds it if lease is
// 0 (see ackNext). m.ready must not be empty. m.mu held.
func (m *Memory) take(now time.Time, lease time.Duration, d *Delivery) {
	e := m.ready.pop()
	e.state = stateLeased
	e.attempt++
	e.gen++
	e.leaseStart = now
	if lease > 0 {
		e.leaseEnd = now.Add(lease)
		m.lease(e)
	} else {
		e.held = true
		m.held++ // counted, not listed: nothing looks for held jobs
	}
	d.Message = e.msg
	d.Attempt = e.attempt
	d.Redelivered = e.delivered
	e.delivered = true
	d.Token = e
	d.Seq = e.gen
	// Wake a waiting receiver if a job is still ready or in the inbox (this
	// receiver may have been woken for the inbox, and took a job that became
	// ready meanwhile instead), or if this lease now ends first: a receiver
	// that went to sleep before it was taken must recompute its wake-up
	// time, or it would miss the lease's expiry.
	// (Waiters are checked first: inboxLen sits on a line the producers
	// write on every job.)
	if m.recvWait.Wakeable() && (m.ready.len() > 0 || m.inboxLen.Load() > 0 || m.leased.head == e) {
		m.signal(&m.recvWait)
	}
}

// ackNext is Ack followed, under the same lock, by a Receive that does not
// wait: if a job is ready, it is taken into d, in place of the job acked,
// and ackNext reports true. A consumer's worker that acks a job and goes
// back for the next one thus takes the lock once, not twice.
//
// now is the caller's reading of the time, which may be old: the consumer's
// keeper reads the clock for its workers, a clock read per job being a
// fifth of the cost of a job, and it can be late on a busy machine. So the
// job taken is held: its lease has no end until the consumer renews it
// (Extend gives it one), as it does for every handler running longer than
// a renewal interval, and the consumer settles every job it takes. Had the
// lease ended at now plus the lease, an old now could end it before the
// handler even started, and the job could be handled twice at once. now
// only dates the lease's start (for the history) and promotes due jobs,
// late if it is old, never early.
func (m *Memory) ackNext(d *Delivery, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.unlease(d)
	if err != nil {
		return false, err
	}
	m.remove(e)
	m.promote(now)
	m.drainIfIdle()
	if m.ready.len() == 0 {
		return false, nil
	}
	m.take(now, 0, d)
	return true, nil
}

// leasedEntry returns the entry d holds a current lease on. m.mu held.
func (m *Memory) leasedEntry(d *Delivery) (*entry, error) {
	e, ok := d.Token.(*entry)
	if !ok || e == nil {
		return nil, fmt.Errorf("queue: delivery not from this backend")
	}
	// An expired lease not yet taken back still holds: nobody else has
	// the job, so settling it is correct.
	if e.gen != d.Seq || e.state != stateLeased {
		return nil, ErrLeaseLost
	}
	return e, nil
}

// dropLease takes e off the leased jobs. m.mu held.
func (m *Memory) dropLease(e *entry) {
	if e.held {
		e.held = false
		m.held--
		return
	}
	m.leased.remove(e)
}

// unlease takes the job of d out of the leased jobs, to settle it. m.mu
// held.
func (m *Memory) unlease(d *Delivery) (*entry, error) {
	e, err := m.leasedEntry(d)
	if err != nil {
		return nil, err
	}
	m.dropLease(e)
	return e, nil
}

// Extend implements Backend.
func (m *Memory) Extend(ctx context.Context, d *Delivery, lease time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.leasedEntry(d)
	if err != nil {
		return err
	}
	m.dropLease(e)
	e.leaseEnd = m.clk.Now().Add(lease)
	m.lease(e)
	// A job that was held (see ackNext) may now end first: a sleeping
	// receiver must recompute its wake-up time (see take).
	if m.leased.head == e && m.recvWait.Wakeable() {
		m.signal(&m.recvWait)
	}
	return nil
}

// Start implements Backend. It takes no lock: it records the start on the
// job with one atomic store, read when the lease expires. A Start after the
// lease expired records nothing (the job has moved on).
func (m *Memory) Start(ctx context.Context, d *Delivery) error {
	e, ok := d.Token.(*entry)
	if !ok || e == nil {
		return fmt.Errorf("queue: delivery not from this backend")
	}
	e.started.Store(d.Seq)
	return nil
}

// Ack implements Backend.
func (m *Memory) Ack(ctx context.Context, d *Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.unlease(d)
	if err != nil {
		return err
	}
	m.remove(e)
	return nil
}

// Nack implements Backend.
func (m *Memory) Nack(ctx context.Context, d *Delivery, delay time.Duration, a Attempt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.unlease(d)
	if err != nil {
		return err
	}
	e.gen++
	e.history = append(e.history, a)
	now := m.clk.Now()
	var at time.Time
	if delay > 0 {
		at = now.Add(delay)
	}
	m.schedule(e, at, now)
	return nil
}

// Release implements Backend.
func (m *Memory) Release(ctx context.Context, d *Delivery, delay time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.unlease(d)
	if err != nil {
		return err
	}
	e.gen++
	e.attempt--
	now := m.clk.Now()
	var at time.Time
	if delay > 0 {
		at = now.Add(delay)
	}
	m.schedule(e, at, now)
	return nil
}

// remove forgets the stored entry e (not in any heap), unblocks its key and
// recycles it. m.mu held.
func (m *Memory) remove(e *entry) {
	m.out.Add(1)
	if !e.fresh {
		delete(m.ids, e.msg.ID)
	}
	if len(m.queuedLater) > 0 {
		delete(m.queuedLater, e)
	}
	m.all.remove(e)
	if k := e.key; k != nil {
		// e may be anywhere in its key FIFO (DropOldest evicts waiting ones).
		wasHead := k.head == e
		k.remove(e)
		if k.head == nil {
			delete(m.keys, e.msg.Key)
			m.keyFree = append(m.keyFree, k)
		} else if wasHead {
			var now time.Time // read the clock only if the next job has a delay
			if !k.head.msg.NotBefore.IsZero() {
				now = m.clk.Now()
			}
			m.schedule(k.head, k.head.msg.NotBefore, now)
		}
	}
	e.recycle()
	e.ln[onAll].next = m.free
	m.free = e
	m.freeN++
	m.signal(&m.roomWait)
	if m.all.n == 0 {
		m.trim()
	}
}
