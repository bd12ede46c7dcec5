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
	all := m.collect(&f)
	driver.SortJobs(all)
	if len(all) > f.Limit {
		all = all[:f.Limit]
	}
	return all, nil
}

// Count implements driver.Admin.
func (m *Backend) Count(ctx context.Context, f driver.Filter) (int, error) {
	f.After = driver.Cursor{}
	return len(m.collect(&f)), nil
}

// collect returns the jobs that match f and come after f.After, unsorted.
func (m *Backend) collect(f *driver.Filter) []driver.JobInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	now, mono := m.clk.Now(), m.mono()
	m.drain()
	m.promote(now, mono)
	var out []driver.JobInfo
	keep := func(info *driver.JobInfo) {
		if f.Match(info) && !f.After.Before(info.EnqueuedAt, info.ID) {
			out = append(out, *info)
		}
	}
	if f.State != driver.StateDead {
		for e := m.all.head; e != nil; e = e.ln[onAll].next {
			info := m.describe(e, now, mono, false)
			keep(&info)
		}
	}
	if f.State == driver.StateDead {
		for el := m.dead.Front(); el != nil; el = el.Next() {
			info := deadInfo(el.Value.(*driver.DeadMessage))
			keep(&info)
		}
	}
	for i := range out {
		out[i].History = slices.Clone(out[i].History)
	}
	return out
}

// describe returns what Admin tells of e at now and mono; withHistory
// copies its history. m.mu held.
func (m *Backend) describe(e *entry, now time.Time, mono time.Duration, withHistory bool) driver.JobInfo {
	info := driver.JobInfo{Message: e.msg, History: e.history}
	if withHistory {
		info.History = slices.Clone(e.history)
	}
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
		info.State, info.NextRun = driver.StateDelayed, e.readyAt
	case stateQueued:
		info.State = driver.StateReady
		if e.msg.NotBefore.After(now) {
			info.State, info.NextRun = driver.StateDelayed, e.msg.NotBefore
		}
	default:
		info.State = driver.StateReady
	}
	return info
}

// deadInfo returns what Admin tells of the dead letter dm.
func deadInfo(dm *driver.DeadMessage) driver.JobInfo {
	return driver.JobInfo{Message: dm.Message, State: driver.StateDead, History: slices.Clone(dm.History),
		Reason: dm.Reason, DeadAt: dm.At}
}

// find returns the stored job with id, or nil. m.mu held.
func (m *Backend) find(id string) *entry {
	if e := m.ids[id]; e != nil {
		return e
	}
	if len(id) != freshLen || m.fresh == "" || id[:freshLen/2] != m.fresh {
		return nil
	}
	for e := m.all.head; e != nil; e = e.ln[onAll].next {
		if e.fresh && e.msg.ID == id {
			return e
		}
	}
	return nil
}

// Get implements driver.Admin.
func (m *Backend) Get(ctx context.Context, id string) (driver.JobInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now, mono := m.clk.Now(), m.mono()
	m.drain()
	m.promote(now, mono)
	if e := m.find(id); e != nil {
		return m.describe(e, now, mono, true), nil
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
	now, mono := m.clk.Now(), m.mono()
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
