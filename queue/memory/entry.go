package memory

import (
	"container/heap"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/ring"

	"github.com/corral-go/corral/queue/driver"
)

// entry states.
const (
	stateQueued  = iota // behind a busy ordering key
	stateReady          // in ready (its ring or its heap)
	stateDelayed        // in timed
	stateLeased         // in leased
)

// entry is a stored job. Its fields are laid out for the job's path: the
// ones that every job reads and writes (from its store to its ack) come
// first, on as few cache lines as they fit, and what only some jobs have
// (an ordering key, headers, a delay, a history...) is in cold, so that a
// job taken from deep in the queue, long out of the cache, costs few
// memory loads, and the entry the collector scans is small.
type entry struct {
	// What take reads and writes of a job taken from the queue, together,
	// and first.
	gen        uint64        // generation of the current lease
	leaseEnd   time.Duration // in the backend's mono time
	leaseStart time.Duration // in the backend's mono time
	attempt    int
	state      uint8
	fresh      bool // the queue generated the ID for it: not in ids (see stored)
	delivered  bool // Receive has leased e at least once
	hasCold    bool // cold holds a field of the message (see setMsg)
	// The message's fields that every job has; the others are in cold.
	id         string
	value      any
	enqueuedAt time.Time
	version    int
	ln         [numLists]links
	// started is the gen of the last lease whose handler started (see
	// Start), written without mu: a lease that expires unstarted spends no
	// attempt. remove leaves it as it is, since a stale Start may write it
	// at any time; a later lease has another gen.
	started atomic.Uint64
	// expired is the gen of the last lease that expired and was taken back
	// (see promote), read by Start without mu: a Start on that lease fails.
	expired atomic.Uint64

	seq     uint64 // enqueue order
	heapIdx int    // index in the heap holding e, -1 if none
	// canceled is the gen of the lease an operator cancelled (see
	// admin.go), read by Start without mu: a Start on that lease fails
	// with ErrCanceled. Like started, recycle leaves it as it is.
	canceled atomic.Uint64
	key      *dlist // the list of e's ordering key, if it has one
	// cold is made the first time the entry stores a job that needs it, and
	// kept when the entry is recycled: its message and readyAt zeroed, its
	// history buffer emptied for reuse.
	cold *coldEntry
}

// coldEntry holds what only some jobs have.
type coldEntry struct {
	// msg holds the message's fields that entry does not (ID, Value,
	// EnqueuedAt and Version are zero here), when entry.hasCold.
	msg     driver.Message
	history []driver.Attempt
	readyAt time.Time // when a delayed job becomes ready
}

// coldOf returns e.cold, made if e has none yet.
func (e *entry) coldOf() *coldEntry {
	if e.cold == nil {
		e.cold = new(coldEntry)
	}
	return e.cold
}

// setMsg stores msg in e, with a zero Attempt and Snoozes and EnqueuedAt
// now if msg has none.
func (e *entry) setMsg(msg *driver.Message, now time.Time) {
	e.id, e.value, e.enqueuedAt, e.version = msg.ID, msg.Value, msg.EnqueuedAt, msg.Version
	if e.enqueuedAt.IsZero() {
		e.enqueuedAt = now
	}
	if msg.Key != "" || msg.Headers != nil || msg.Body != nil || !msg.NotBefore.IsZero() ||
		!msg.StartBy.IsZero() || msg.Unique != "" || msg.UniqueFor != 0 {
		c := e.coldOf()
		c.msg = *msg
		c.msg.ID, c.msg.Value, c.msg.EnqueuedAt, c.msg.Version = "", nil, time.Time{}, 0
		c.msg.Attempt, c.msg.Snoozes = 0, 0
		e.hasCold = true
	}
}

// message writes the message e stores into *msg.
func (e *entry) message(msg *driver.Message) {
	if e.hasCold {
		*msg = e.cold.msg
	} else {
		*msg = driver.Message{}
	}
	msg.ID, msg.Value, msg.EnqueuedAt, msg.Version = e.id, e.value, e.enqueuedAt, e.version
}

// msg returns the message e stores.
func (e *entry) msg() driver.Message {
	var msg driver.Message
	e.message(&msg)
	return msg
}

// coldMsg returns the fields of e's message kept in cold (zero if none):
// Key, Headers, Body, NotBefore, StartBy, Unique, UniqueFor, Snoozes.
func (e *entry) coldMsg() *driver.Message {
	if e.hasCold {
		return &e.cold.msg
	}
	return &noCold
}

// noCold is coldMsg's answer for an entry without cold fields. Nothing
// writes it.
var noCold driver.Message

// history returns e's attempts so far.
func (e *entry) history() []driver.Attempt {
	if e.cold == nil {
		return nil
	}
	return e.cold.history
}

// addAttempt appends a to e's history.
func (e *entry) addAttempt(a driver.Attempt) {
	c := e.coldOf()
	c.history = append(c.history, a)
}

// readyAt returns when e, delayed, becomes ready.
func (e *entry) readyAt() time.Time { return e.cold.readyAt }

// The lists an entry is on at once, each threaded through its own links.
const (
	onAll   = iota // Backend.all, or the free list once the entry is recycled
	onLease        // Backend.leased
	onKey          // the list of the entry's ordering key
	numLists
)

type links struct{ prev, next *entry }

// dlist is a doubly linked list of entries through their links ln[on].
type dlist struct {
	head, tail *entry
	n          int
	on         int
}

// insertAfter puts e after at, or first if at is nil.
func (l *dlist) insertAfter(at, e *entry) {
	le := &e.ln[l.on]
	le.prev = at
	if at != nil {
		le.next = at.ln[l.on].next
		at.ln[l.on].next = e
	} else {
		le.next = l.head
		l.head = e
	}
	if le.next != nil {
		le.next.ln[l.on].prev = e
	} else {
		l.tail = e
	}
	l.n++
}

func (l *dlist) push(e *entry) { l.insertAfter(l.tail, e) }

func (l *dlist) remove(e *entry) {
	le := &e.ln[l.on]
	if le.prev != nil {
		le.prev.ln[l.on].next = le.next
	} else {
		l.head = le.next
	}
	if le.next != nil {
		le.next.ln[l.on].prev = le.prev
	} else {
		l.tail = le.prev
	}
	*le = links{}
	l.n--
}

// readyQueue holds the ready jobs in enqueue order. Jobs that become ready
// in enqueue order (the common case: fresh jobs) go to a FIFO ring at O(1);
// the others (retries, released jobs, a key's next job) go to a heap.
type readyQueue struct {
	ring    ring.Ring[*entry]
	ringMax uint64 // highest seq ever put in the ring
	heap    seqHeap
}

// len returns the number of ready jobs. (len(r.heap), not r.heap.Len(),
// costs the inliner less: drainIfIdle, which calls len, stays within the
// inlining budget, a call less on every Receive and AckNext.)
func (r *readyQueue) len() int { return r.ring.Len() + len(r.heap) }

func (r *readyQueue) push(e *entry) {
	if e.seq > r.ringMax {
		r.ringMax = e.seq
		r.ring.Push(e)
		return
	}
	heap.Push(&r.heap, e)
}

// pop removes the ready job enqueued first. r must not be empty.
func (r *readyQueue) pop() *entry {
	if r.ring.Len() > 0 && (r.heap.Len() == 0 || (*r.ring.Front()).seq < r.heap[0].seq) {
		return r.ring.Pop()
	}
	return heap.Pop(&r.heap).(*entry)
}

// remove takes out e, a ready job: from the heap if it is there, else from
// the ring. A job in the ring is only removed as the oldest job not in
// flight (DropOldest), and the ring's head is older than every other job in
// it and not in flight: so it is e.
func (r *readyQueue) remove(e *entry) {
	if e.heapIdx >= 0 {
		heap.Remove(&r.heap, e.heapIdx)
		return
	}
	if r.ring.Len() == 0 || *r.ring.Front() != e {
		panic("memory: internal error: removing a ready job that is not the oldest")
	}
	r.ring.Pop()
}

// removeAny takes out e, a ready job, wherever it is: an operator's cancel
// (see admin.go) may name any of them. From the ring it costs a pass over
// the ring, which keeps its order.
func (r *readyQueue) removeAny(e *entry) {
	if e.heapIdx >= 0 {
		heap.Remove(&r.heap, e.heapIdx)
		return
	}
	r.ring.Compact(func(x **entry) bool { return *x != e })
}

type seqHeap []*entry

func (h seqHeap) Len() int           { return len(h) }
func (h seqHeap) Less(i, j int) bool { return h[i].seq < h[j].seq }
func (h seqHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *seqHeap) Push(x any) { e := x.(*entry); e.heapIdx = len(*h); *h = append(*h, e) }
func (h *seqHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heapIdx = -1
	return e
}

// timeHeap holds the delayed jobs by readyAt, then seq.
type timeHeap struct {
	es []*entry
}

func (h *timeHeap) Len() int { return len(h.es) }
func (h *timeHeap) Less(i, j int) bool {
	a, b := h.es[i].readyAt(), h.es[j].readyAt()
	if a.Equal(b) {
		return h.es[i].seq < h.es[j].seq
	}
	return a.Before(b)
}
func (h *timeHeap) Swap(i, j int) {
	h.es[i], h.es[j] = h.es[j], h.es[i]
	h.es[i].heapIdx, h.es[j].heapIdx = i, j
}
func (h *timeHeap) Push(x any) { e := x.(*entry); e.heapIdx = len(h.es); h.es = append(h.es, e) }
func (h *timeHeap) Pop() any {
	e := h.es[len(h.es)-1]
	h.es[len(h.es)-1] = nil
	h.es = h.es[:len(h.es)-1]
	e.heapIdx = -1
	return e
}

// recycle clears e for reuse, but for started, expired and canceled (see
// entry), which a stale Start may read or write at any time, and its cold
// part's buffers, and moves it to a new generation.
func (e *entry) recycle() {
	e.gen++
	e.seq, e.leaseEnd, e.leaseStart, e.attempt = 0, 0, 0, 0
	e.heapIdx, e.state = -1, 0
	e.fresh, e.delivered, e.hasCold = false, false, false
	e.ln = [numLists]links{}
	e.id, e.value, e.enqueuedAt, e.version = "", nil, time.Time{}, 0
	e.key = nil
	if c := e.cold; c != nil {
		*c = coldEntry{history: c.history[:0]}
	}
}
