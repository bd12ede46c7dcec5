package memory

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// lease puts e, leased, in m.leased in order of lease end (then of lease
// start). Leases are mostly taken, and renewed, for the same duration, so a
// new lease end is mostly the latest: the search from the tail is O(1)
// then, as is remove, where a heap would be O(log n) for both.
func (m *Backend) lease(e *entry) {
	at := m.leased.tail
	for at != nil && at.leaseEnd > e.leaseEnd {
		at = at.ln[onLease].prev
	}
	m.leased.insertAfter(at, e)
}

// promote moves due delayed jobs to ready and expires leases, at now and
// mono, two readings of the clock taken together; now may be zero, and is
// then read only if a delayed job or an expired lease needs it. m.mu held.
func (m *Backend) promote(now time.Time, mono time.Duration) {
	if m.timed.Len() > 0 {
		if now.IsZero() {
			now = m.clk.Now()
		}
		for m.timed.Len() > 0 && !m.timed.es[0].readyAt().After(now) {
			e := heap.Pop(&m.timed).(*entry)
			e.state = stateReady
			m.ready.push(e)
		}
	}
	for m.leased.head != nil && m.leased.head.leaseEnd <= mono {
		e := m.leased.head
		m.leased.remove(e)
		// expired first, then started; Start writes started, then reads
		// expired: one of the two sees the other, so a Start that missed
		// the expiry was seen here, and its run counted.
		e.expired.Store(e.gen)
		if e.started.Load() == e.gen {
			if now.IsZero() {
				now = m.clk.Now()
			}
			start := now.Add(e.leaseStart - mono)
			e.addAttempt(driver.Attempt{Number: e.attempt, Start: start, End: now, Error: driver.ErrLeaseExpired.Error()})
		} else {
			e.attempt-- // no handler ran on this lease: no attempt spent
		}
		if e.isCanceled() { // see Cancel
			if now.IsZero() {
				now = m.clk.Now()
			}
			e.state = stateQueued // in no heap or ring: bury removes it from nothing
			m.bury(e, driver.ReasonCanceled, driver.Attempt{}, now, nil)
			continue
		}
		e.gen++ // the lease holder's delivery is now stale
		e.state = stateReady
		m.ready.push(e)
	}
}

// next returns how long a receiver waits, from now and mono (see promote),
// until something becomes ready; zero if nothing will. m.mu held.
func (m *Backend) next(now time.Time, mono time.Duration) time.Duration {
	const none = time.Duration(1<<63 - 1)
	wait := none
	if m.timed.Len() > 0 {
		wait = m.timed.es[0].readyAt().Sub(now)
	}
	if h := m.leased.head; h != nil {
		wait = min(wait, h.leaseEnd-mono)
	}
	if h := m.cfg.DedupHorizon; h > 0 && m.seen.fifo.n > 0 {
		// A waiting receiver wakes to forget expired IDs, a batch at a time, so that an
		// idle queue gives their memory back too.
		wait = min(wait, m.seen.fifo.peek().at.Add(h).Sub(now))
	}
	switch {
	case wait == none:
		return 0
	case wait <= 0:
		return 1 // due already: look again at once
	}
	return wait
}

// Receive implements driver.Backend. It fails if lease is not positive.
func (m *Backend) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	_, err := m.ReceiveAt(ctx, lease, d)
	return err
}

// ReceiveAt implements driver.InProcess: Receive, which also returns the
// time the lease starts.
func (m *Backend) ReceiveAt(ctx context.Context, lease time.Duration, d *driver.Delivery) (time.Time, error) {
	if lease <= 0 {
		return time.Time{}, fmt.Errorf("memory: lease %v must be positive", lease)
	}
	if m.kick == nil {
		panic(unopened)
	}
	now, mono := m.clock() // outside the lock; read again after a wait
	m.mu.Lock()
	for {
		if m.closed.Load() {
			m.mu.Unlock()
			return time.Time{}, driver.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			// This receiver may have been woken for a job: pass it on.
			m.signal(&m.recvWait)
			m.mu.Unlock()
			return time.Time{}, context.Cause(ctx)
		}
		m.promote(now, mono)
		if m.cfg.DedupHorizon > 0 {
			m.seen.prune(now, m.cfg.DedupHorizon)
		}
		if m.paused {
			// Drained whatever the ready jobs: a receiver that finds the
			// inbox full goes round again, and while paused it would spin.
			m.drain()
		} else {
			m.drainIfIdle()
		}
		if m.ready.len() > 0 && !m.paused {
			m.take(mono, lease, d)
			m.mu.Unlock()
			return now, nil
		}
		m.sleepers.Add(1)
		if m.inboxLen.Load() > 0 {
			// A job came in through the inbox after promote drained it.
			m.sleepers.Add(-1)
			continue
		}
		err := m.wait(ctx, &m.recvWait, m.next(now, mono), m.kick)
		m.sleepers.Add(-1)
		if err != nil {
			m.mu.Unlock()
			return time.Time{}, err
		}
		now, mono = m.clock()
	}
}

// take leases the first ready job for lease from mono into d. m.ready must
// not be empty. m.mu held.
func (m *Backend) take(mono, lease time.Duration, d *driver.Delivery) {
	e := m.ready.pop()
	e.state = stateLeased
	e.attempt++
	e.gen++
	e.leaseStart = mono
	e.leaseEnd = mono + lease
	m.lease(e)
	e.message(&d.Message)
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

// AckNext implements driver.InProcess: Ack of d and, under the same lock,
// a Receive that does not wait. A consumer's worker that acks a job and
// goes back for the next one thus takes the lock once, not twice. The lease
// of the job it takes starts at now, the caller's reading of the clock (a
// zero now: the backend reads the clock), and ends at now + lease. It fails
// as Receive does if lease is not positive, and then acks nothing.
func (m *Backend) AckNext(ctx context.Context, d *driver.Delivery, now time.Time, lease time.Duration) (bool, error) {
	if lease <= 0 {
		return false, fmt.Errorf("memory: lease %v must be positive", lease)
	}
	if now.IsZero() {
		now = m.clk.Now()
	}
	mono := m.epoch.At(now) // the caller's reading: no clock read here
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.unlease(d)
	if err != nil {
		return false, err
	}
	m.remove(e)
	m.promote(now, mono)
	m.drainIfIdle()
	if m.ready.len() == 0 || m.closed.Load() || m.paused {
		return false, nil
	}
	m.take(mono, lease, d)
	return true, nil
}

// leasedEntry returns the entry d holds a current lease on. m.mu held.
func (m *Backend) leasedEntry(d *driver.Delivery) (*entry, error) {
	e, ok := d.Token.(*entry)
	if !ok || e == nil {
		return nil, errNotMine
	}
	// An expired lease not yet taken back still holds: nobody else has
	// the job, so settling it is correct.
	if e.gen != d.Seq || e.state != stateLeased {
		return nil, driver.ErrLeaseLost
	}
	return e, nil
}

// dropLease takes e off the leased jobs. m.mu held.
func (m *Backend) dropLease(e *entry) {
	m.leased.remove(e)
}

// errNotMine is the error of a call given a Delivery this backend did not
// make.
var errNotMine = errors.New("memory: delivery not from this backend")

// unlease takes the job of d out of the leased jobs, to settle it. m.mu
// held.
func (m *Backend) unlease(d *driver.Delivery) (*entry, error) {
	e, err := m.leasedEntry(d)
	if err != nil {
		return nil, err
	}
	m.dropLease(e)
	return e, nil
}

// Extend implements driver.Backend.
func (m *Backend) Extend(ctx context.Context, d *driver.Delivery, lease time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.leasedEntry(d)
	if err != nil {
		return err
	}
	if e.isCanceled() {
		return driver.ErrCanceled // the lease stays: the handler winds down
	}
	m.dropLease(e)
	e.leaseEnd = m.mono() + lease
	m.lease(e)
	// A lease renewed for less than it had left may now end first: a
	// sleeping receiver must recompute its wake-up time (see take).
	if m.leased.head == e && m.recvWait.Wakeable() {
		m.signal(&m.recvWait)
	}
	return nil
}

// Start implements driver.Backend. It takes no lock: it records the start on
// the job with one atomic store, read when the lease expires. A Start on a
// lease that expired and was taken back fails with ErrLeaseLost, and spends
// no attempt (the job has moved on; its handler must not run).
func (m *Backend) Start(ctx context.Context, d *driver.Delivery) error {
	e, ok := d.Token.(*entry)
	if !ok || e == nil {
		return errNotMine
	}
	e.started.Store(d.Seq)
	if e.expired.Load() == d.Seq {
		return driver.ErrLeaseLost
	}
	if e.canceled.Load() == d.Seq {
		return driver.ErrCanceled
	}
	return nil
}

// Ack implements driver.Backend.
func (m *Backend) Ack(ctx context.Context, d *driver.Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.unlease(d)
	if err != nil {
		return err
	}
	m.remove(e)
	return nil
}

// Nack implements driver.Backend; a snooze gives back the attempt, as
// Release does, and counts in the job's Message.Snoozes.
func (m *Backend) Nack(ctx context.Context, d *driver.Delivery, delay time.Duration, a driver.Attempt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.takeBack(d, a)
	if e == nil {
		return err
	}
	e.addAttempt(a)
	if a.Snoozed {
		e.attempt-- // a snooze spends no attempt
		c := e.coldOf()
		c.msg.Snoozes++
		e.hasCold = true
	}
	m.requeue(e, delay)
	return nil
}

// Release implements driver.Backend.
func (m *Backend) Release(ctx context.Context, d *driver.Delivery, delay time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.takeBack(d, driver.Attempt{})
	if e == nil {
		return err
	}
	e.attempt--
	m.requeue(e, delay)
	return nil
}

// takeBack takes the lease of d's job back for Nack (a, the attempt it
// records) or Release (a zero Attempt), and returns its entry, to be made
// ready again; nil if there is none to requeue: with the error of a lease
// that is not d's, or with nil if an operator cancelled the job (see
// Cancel), which it dead-lettered. m.mu held.
func (m *Backend) takeBack(d *driver.Delivery, a driver.Attempt) (*entry, error) {
	e, err := m.leasedEntry(d)
	if err != nil {
		return nil, err
	}
	if e.isCanceled() {
		m.bury(e, driver.ReasonCanceled, a, m.clk.Now(), nil)
		return nil, nil
	}
	m.dropLease(e)
	return e, nil
}

// requeue makes the unleased job e ready again after delay, under a new
// generation, so that the delivery that held it can no longer settle it.
// m.mu held.
func (m *Backend) requeue(e *entry, delay time.Duration) {
	e.gen++
	now := m.clk.Now()
	var at time.Time
	if delay > 0 {
		at = now.Add(delay)
	}
	m.schedule(e, at, now)
}

// remove forgets the stored entry e (not in any heap), unblocks its key and
// recycles it. m.mu held.
func (m *Backend) remove(e *entry) {
	m.out.Add(1)
	if cm := e.coldMsg(); cm.Unique != "" {
		m.uniques.leave(cm.Unique, e.id, cm.UniqueFor, m.clk.Now())
	}
	if !e.fresh {
		delete(m.ids, e.id)
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
			delete(m.keys, e.coldMsg().Key)
			m.keyFree = append(m.keyFree, k)
		} else if wasHead {
			var now time.Time // read the clock only if the next job has a delay
			nb := k.head.coldMsg().NotBefore
			if !nb.IsZero() {
				now = m.clk.Now()
			}
			m.schedule(k.head, nb, now)
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
