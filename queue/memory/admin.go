package memory

import (
	"context"
	"slices"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// The operator's verbs (driver.Admin). They take m.mu and walk what they
// look at: a listing or a count is a pass over the stored jobs or the dead
// letters, and a cancel of a job whose ID the queue generated a search for
// it (see stored). They are for an operator, not for every job's path.
//
// A pause takes effect at once: once SetPaused(true) returned, no Receive,
// ReceiveAt or AckNext of this backend hands out a job until
// SetPaused(false). A cancel of a job in flight reaches its handler through
// the consumer's next lease renewal (queue.WithLease says how often).

// List implements driver.Admin.
func (m *Backend) List(ctx context.Context, f driver.Filter) ([]driver.JobInfo, error) {
	if err := f.CheckPage(); err != nil {
		return nil, err
	}
	return driver.Page(m.collect(f.State == driver.StateDead), &f), nil
}

// Count implements driver.Admin.
func (m *Backend) Count(ctx context.Context, f driver.Filter) (int, error) {
	f.After, f.Limit = driver.Cursor{}, 0
	return len(driver.Page(m.collect(f.State == driver.StateDead), &f)), nil
}

// collect returns the dead letters if dead, else the stored jobs, with their
// histories copied.
func (m *Backend) collect(dead bool) []driver.JobInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	now, mono := m.clock()
	m.drain()
	m.promote(now, mono)
	if dead {
		out := make([]driver.JobInfo, 0, m.dead.Len())
		for el := m.dead.Front(); el != nil; el = el.Next() {
			out = append(out, deadInfo(el.Value.(*driver.DeadMessage)))
		}
		return out
	}
	out := make([]driver.JobInfo, 0, m.all.n)
	for e := m.all.head; e != nil; e = e.ln[onAll].next {
		out = append(out, m.describe(e, now, mono))
	}
	return out
}

// describe returns what Admin tells of e at now and mono, with a copy of
// its history. m.mu held.
func (m *Backend) describe(e *entry, now time.Time, mono time.Duration) driver.JobInfo {
	info := driver.JobInfo{Message: e.msg()}
	info.History = slices.Clone(e.history())
	info.Attempt = e.attempt
	switch e.state {
	case stateLeased:
		info.State = driver.StateInFlight
		info.LeaseEnd = now.Add(e.leaseEnd - mono)
		info.Canceling = e.canceled.Load() == e.gen
		if e.started.Load() != e.gen {
			info.Attempt-- // Receive counted a run that has not started
		}
	case stateDelayed:
		info.State, info.NextRun = driver.StateDelayed, e.readyAt()
	case stateQueued:
		info.State = driver.StateReady
		if nb := e.coldMsg().NotBefore; nb.After(now) {
			info.State, info.NextRun = driver.StateDelayed, nb
		}
	default:
		info.State = driver.StateReady
	}
	return info
}

// deadInfo returns what Admin tells of the dead letter dm.
func deadInfo(dm *driver.DeadMessage) driver.JobInfo {
	info := driver.DeadInfo(dm)
	info.History = slices.Clone(dm.History)
	return info
}

// Get implements driver.Admin.
func (m *Backend) Get(ctx context.Context, id string) (driver.JobInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now, mono := m.clock()
	m.drain()
	m.promote(now, mono)
	if e := m.find(id); e != nil {
		return m.describe(e, now, mono), nil
	}
	if el := m.deadIDs[id]; el != nil {
		return deadInfo(el.Value.(*driver.DeadMessage)), nil
	}
	return driver.JobInfo{}, driver.ErrNoJob
}

// Cancel implements driver.Admin. A job waiting is dead-lettered at once;
// if that evicts dead letters beyond the limit, their IDs are not reported
// (no hook sees an operator's cancel).
func (m *Backend) Cancel(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now, mono := m.clock()
	m.drain()
	m.promote(now, mono)
	e := m.find(id)
	switch {
	case e == nil && m.deadIDs[id] != nil:
		return nil // a dead letter: already terminal
	case e == nil:
		return driver.ErrNoJob
	case e.state == stateLeased:
		e.canceled.Store(e.gen)
		return nil
	case e.state == stateReady:
		m.ready.removeAny(e)
		e.state = stateQueued // in no heap or ring now: bury removes it from nothing
	}
	m.bury(e, driver.ReasonCanceled, canceledAttempt(now), now, nil)
	return nil
}

// canceledAttempt is the history entry of a job cancelled without a run.
func canceledAttempt(now time.Time) driver.Attempt {
	return driver.Attempt{Start: now, End: now, Error: driver.ErrCanceled.Error()}
}

// isCanceled reports whether the lease of e was cancelled. m.mu held.
func (e *entry) isCanceled() bool { return e.canceled.Load() == e.gen }

// SetPaused implements driver.Admin: the pause holds in this process, the
// only one with access to the backend.
func (m *Backend) SetPaused(ctx context.Context, paused bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paused = paused
	if !paused {
		m.broadcast(&m.recvWait)
	}
	return nil
}

var _ driver.Admin = (*Backend)(nil)
