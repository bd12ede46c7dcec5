package memory

import (
	"container/heap"
	"container/list"
	"context"
	"iter"
	"slices"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// Bury implements driver.Backend.
func (m *Backend) Bury(ctx context.Context, d *driver.Delivery, reason driver.Reason, a driver.Attempt) (driver.BuryResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.leasedEntry(d)
	if err != nil {
		return driver.BuryResult{}, err
	}
	var res driver.BuryResult
	res.DeadEvicted = m.bury(e, reason, a, m.clk.Now(), nil)
	return res, nil
}

// bury moves e to the dead letters with the final attempt a, evicting the
// oldest dead letters beyond the limit, whose IDs it appends to evicted and
// returns. A zero a (Number 0, no Error) adds no history entry. The dead
// letter's Attempt is the handler runs e had. m.mu held.
func (m *Backend) bury(e *entry, reason driver.Reason, a driver.Attempt, now time.Time, evicted []string) []string {
	switch e.state {
	case stateReady:
		m.ready.remove(e)
	case stateDelayed:
		heap.Remove(&m.timed, e.heapIdx)
	case stateLeased:
		m.dropLease(e)
	}
	dm := &driver.DeadMessage{Message: e.msg(), Reason: reason, At: now}
	dm.Attempt = e.attempt
	if e.state == stateLeased && e.started.Load() != e.gen {
		dm.Attempt-- // no handler started on this lease: Receive counted it ahead
	}
	hist := e.history()
	dm.History = append(make([]driver.Attempt, 0, len(hist)+1), hist...)
	if a.Number != 0 || a.Error != "" {
		dm.History = append(dm.History, a)
	}
	if old := m.deadIDs[dm.ID]; old != nil {
		// A later job with the same ID: the newer dead letter replaces
		// the older, so that Redrive and Purge name one.
		m.dropDead(old)
	}
	m.deadIDs[dm.ID] = m.dead.PushBack(dm)
	m.deadPeak = max(m.deadPeak, len(m.deadIDs))
	for m.dead.Len() > m.cfg.DeadLetterLimit {
		old := m.dead.Front()
		evicted = append(evicted, old.Value.(*driver.DeadMessage).ID)
		m.dropDead(old)
	}
	m.remove(e)
	return evicted
}

// DeadLetters implements driver.Backend. The listing is a snapshot taken when the
// iteration starts.
func (m *Backend) DeadLetters(ctx context.Context) iter.Seq2[driver.DeadMessage, error] {
	return func(yield func(driver.DeadMessage, error) bool) {
		m.mu.Lock()
		snap := make([]driver.DeadMessage, 0, m.dead.Len())
		for el := m.dead.Front(); el != nil; el = el.Next() {
			dm := *el.Value.(*driver.DeadMessage)
			dm.History = slices.Clone(dm.History)
			snap = append(snap, dm)
		}
		m.mu.Unlock()
		for _, d := range snap {
			if err := ctx.Err(); err != nil {
				yield(driver.DeadMessage{}, context.Cause(ctx))
				return
			}
			if !yield(d, nil) {
				return
			}
		}
	}
}

// dropDead deletes the dead letter el. m.mu held.
func (m *Backend) dropDead(el *list.Element) {
	delete(m.deadIDs, el.Value.(*driver.DeadMessage).ID)
	m.dead.Remove(el)
}

// Redrive implements driver.Backend. The redriven job skips the dedup horizon and
// capacity's Block (it fails with ErrFull instead) but not its own ID.
func (m *Backend) Redrive(ctx context.Context, id string) error {
	m.mu.Lock()
	dl := m.deadIDs[id]
	if dl == nil {
		m.mu.Unlock()
		return driver.ErrNotFound
	}
	// Not m.stored(id), whose search for generated IDs would make
	// redriving every dead letter quadratic: the one job the queue gave
	// this ID to is this dead letter (the queue refuses an explicit ID it
	// has yet to generate), so a stored job with it was enqueued with it
	// explicitly, or redriven, and is in ids.
	m.drain()
	if _, ok := m.ids[id]; ok {
		m.mu.Unlock()
		return driver.ErrDuplicate
	}
	if !m.reserve() {
		m.mu.Unlock()
		return driver.ErrFull
	}
	msg := dl.Value.(*driver.DeadMessage).Message
	m.dropDead(dl)
	// A redriven job is a new job: fresh attempts, new enqueue time, no
	// delay or start-by deadline; the dedup horizon does not apply to it.
	msg.EnqueuedAt, msg.NotBefore, msg.StartBy = time.Time{}, time.Time{}, time.Time{}
	msg.Unique, msg.UniqueFor = "", 0             // nor does its unique key
	m.store(msg, false, time.Time{}, m.clk.Now()) // in ids from now on
	m.mu.Unlock()
	return nil
}

// Purge implements driver.Backend.
func (m *Backend) Purge(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dl := m.deadIDs[id]
	if dl == nil {
		return driver.ErrNotFound
	}
	m.dropDead(dl)
	return nil
}
