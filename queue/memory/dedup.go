package memory

import "time"

// The dedup horizon of the in-memory backend: the IDs enqueued within it,
// with their enqueue times, forgotten in enqueue order as they leave it. The
// forgetting is incremental: each enqueue, and each turn of a receiver's
// loop (a waiting receiver wakes when the oldest ID expires), forgets at most
// pruneBatch IDs, so that no call holds the lock for a pass over
// every ID (a million of them took 273ms), and the map is rebuilt small
// once it has shrunk, since a Go map never gives its memory back by itself.

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
	for range pruneBatch {
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
}
