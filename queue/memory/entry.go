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

type entry struct {
	msg        driver.Message
	state      int
	seq        uint64 // enqueue order
	gen        uint64 // generation of the current lease
	attempt    int
	readyAt    time.Time
	leaseEnd   time.Duration // in the backend's mono time
	leaseStart time.Duration // in the backend's mono time
	history    []driver.Attempt
	fresh      bool // the queue generated msg's ID for it: not in ids (see stored)
	delivered  bool // Receive has leased e at least once
	// started is the gen of the last lease whose handler started (see
	// Start), written without mu: a lease that expires unstarted spends no
	// attempt. remove leaves it as it is, since a stale Start may write it
	// at any time; a later lease has another gen.
	started atomic.Uint64
	// expired is the gen of the last lease that expired and was taken back
	// (see promote), read by Start without mu: a Start on that lease fails.
	expired atomic.Uint64
	// canceled is the gen of the lease an operator cancelled (see
	// admin.go), read by Start without mu: a Start on that lease fails
	// with ErrCanceled. Like started, recycle leaves it as it is.
	canceled atomic.Uint64
	heapIdx  int // index in the heap holding e, -1 if none
	ln       [numLists]links
	key      *dlist // the list of e's ordering key, if it has one
}

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
	a, b := h.es[i].readyAt, h.es[j].readyAt
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

// recycle clears e for reuse, but for started and expired (see entry), which
// a stale Start may read or write at any time, and its history's
// buffer, and moves it to a new generation.
func (e *entry) recycle() {
	gen, hist := e.gen+1, e.history[:0]
	e.msg = driver.Message{}
	e.state, e.seq, e.attempt = 0, 0, 0
	e.readyAt, e.leaseEnd, e.leaseStart = time.Time{}, 0, 0
	e.fresh, e.delivered = false, false
	e.heapIdx = -1
	e.ln = [numLists]links{}
	e.key = nil
	e.gen, e.history = gen, hist
}
