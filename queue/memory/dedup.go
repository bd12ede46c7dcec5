package memory

import "time"

// The dedup horizon of the in-memory backend: the IDs enqueued within it,
// with their enqueue times, forgotten in enqueue order as they leave it. The
// forgetting is incremental, so that no call holds the lock for a pass over
// every ID: each enqueue, and each turn of a receiver's loop, forgets at
// most pruneBatch IDs, and a timer the backend owns (see sweep) forgets the
// rest, sweepBatch at a time, whether or not calls come. The map is rebuilt
// small once it has shrunk, since a Go map never gives its memory back by
// itself.

// pruneBatch is how many expired IDs one call forgets at most: more than
// the one ID an enqueue adds, so that forgetting outpaces remembering.
const pruneBatch = 64

// seenChunk is the size of the blocks of seenFIFO: a block is freed as a
// whole once its IDs are forgotten, so the FIFO never copies its contents.
const seenChunk = 256

type seenID struct {
	id string
	at time.Time
}

// seenFIFO is a FIFO of seenIDs in blocks of seenChunk.
type seenFIFO struct {
	blocks [][]seenID // blocks[0][head:] then the others, each full but the last
	head   int
	n      int
}

func (f *seenFIFO) push(s seenID) {
	if k := len(f.blocks); k == 0 || len(f.blocks[k-1]) == seenChunk {
		f.blocks = append(f.blocks, make([]seenID, 0, seenChunk))
	}
	k := len(f.blocks) - 1
	f.blocks[k] = append(f.blocks[k], s)
	f.n++
}

// peek returns the oldest entry. f must not be empty.
func (f *seenFIFO) peek() seenID { return f.blocks[0][f.head] }

func (f *seenFIFO) pop() {
	f.blocks[0][f.head] = seenID{}
	f.head++
	f.n--
	if f.head == seenChunk || f.n == 0 {
		f.blocks[0] = nil
		f.blocks = f.blocks[1:]
		f.head = 0
		if len(f.blocks) == 0 {
			f.blocks = nil // drop the spine too
		}
	}
}

// dedup is the in-memory backend's record of the IDs within the horizon.
type dedup struct {
	seen map[string]time.Time // ID -> enqueue time
	fifo seenFIFO             // the same IDs in enqueue order
	peak int                  // len(seen) at its largest since it was made
}

func (d *dedup) remember(id string, at time.Time) {
	if d.seen == nil {
		d.seen = make(map[string]time.Time)
	}
	d.seen[id] = at
	d.fifo.push(seenID{id, at})
	d.peak = max(d.peak, len(d.seen))
}

// taken reports whether id was remembered less than horizon before now.
func (d *dedup) taken(id string, now time.Time, horizon time.Duration) bool {
	at, ok := d.seen[id]
	return ok && now.Sub(at) < horizon
}

// prune forgets at most pruneBatch of the IDs remembered horizon or more
// before now, oldest first, and rebuilds the map once it is a quarter of its
// peak (at a cost of at most a quarter of the forgetting that led there).
func (d *dedup) prune(now time.Time, horizon time.Duration) {
	d.forget(now, horizon, pruneBatch)
}

// forget is prune, forgetting at most batch IDs. It reports whether it
// stopped at the batch with expired IDs left.
func (d *dedup) forget(now time.Time, horizon time.Duration, batch int) (more bool) {
	for range batch {
		if d.fifo.n == 0 {
			break
		}
		s := d.fifo.peek()
		if now.Sub(s.at) < horizon {
			break
		}
		if at, ok := d.seen[s.id]; ok && at.Equal(s.at) {
			delete(d.seen, s.id)
		}
		d.fifo.pop()
	}
	more = d.fifo.n > 0 && now.Sub(d.fifo.peek().at) >= horizon
	switch n := len(d.seen); {
	case n == 0 && d.peak > 0:
		d.seen, d.peak = nil, 0
	case d.peak >= 4*seenChunk && n <= d.peak/4:
		// Copying the n left is paid for by the 3n or more forgotten.
		m := make(map[string]time.Time, n)
		for id, at := range d.seen {
			m[id] = at
		}
		d.seen, d.peak = m, n
	}
	return more
}

// sweepBatch is how many expired IDs the sweep forgets per hold of the
// lock: it lets other calls in between its batches.
const sweepBatch = 16 * pruneBatch

// sweepSlack is the sweep's lateness, as a fraction of the horizon: the
// sweep for the oldest ID runs horizon/sweepSlack after that ID expired, and
// forgets every ID expired by then, so that it runs at most once per
// horizon/sweepSlack however many IDs expire.
const sweepSlack = 8

// armSweep makes sure a sweep is due for the IDs remembered: at the oldest
// one's expiry plus horizon/sweepSlack. It does nothing once the backend is
// closed, or if a sweep is already due. m.mu held.
func (m *Backend) armSweep() {
	if m.sweepArmed || m.closed.Load() || m.seen.fifo.n == 0 {
		return
	}
	h := m.cfg.DedupHorizon
	at := m.seen.fifo.peek().at.Add(h + h/sweepSlack)
	m.sweepArmed = true
	m.sweeps.Add(1) // done by the sweep, or by Close if it stops the timer
	if m.sweepTimer == nil {
		m.sweepTimer = time.AfterFunc(time.Until(at), m.sweep)
		return
	}
	m.sweepTimer.Reset(time.Until(at))
}

// sweep runs on the timer armSweep set: it forgets every ID expired by now,
// sweepBatch at a time, unlocking between batches, then arms the next sweep
// for the IDs left. Close waits for a sweep that has begun (m.sweeps).
func (m *Backend) sweep() {
	defer m.sweeps.Done()
	for {
		m.mu.Lock()
		if m.closed.Load() {
			m.sweepArmed = false
			m.mu.Unlock()
			return
		}
		more := m.seen.forget(m.clk.Now(), m.cfg.DedupHorizon, sweepBatch)
		if !more {
			m.sweepArmed = false
			m.armSweep()
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
	}
}
