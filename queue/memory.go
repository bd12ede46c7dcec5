package queue

import (
	"container/heap"
	"container/list"
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Memory is the in-memory Backend, the default of [New]. It keeps payload
// values (no encoding) and loses everything when the process exits.
//
// A Memory outlives the consumers that drain it: jobs left by a closed
// consumer are delivered to the next one. Its time-based behaviour (delays,
// leases, the dedup horizon) follows the time package, so it runs on virtual
// time inside a testing/synctest bubble when created there.
//
// A Memory serves one Queue: Open fails if called twice. Memory is safe for
// concurrent use.
type Memory struct {
	// The fields are grouped by who writes them, each group on cache lines
	// of its own (the blank pads), so that the producers' writes and the
	// consumers' writes do not evict each other's lines on every job.

	// Written once (cfg by Open, before any other call; kick by NewMemory)
	// or once a second (clk's anchor); read by everyone.
	clk  clock // reads the time (time.Now, at half the cost)
	cfg  Config
	kick chan struct{} // capacity 1: wakes a waiting receiver for the inbox, without mu
	_    [64]byte

	// The fast path of Enqueue (see Enqueue) appends to inbox under inMu,
	// not mu, so that a producer does not contend with the consumers for
	// mu. The inbox is moved into the queue (drain) by a receiver that finds
	// no ready job, and by every other call that must see all the jobs.
	inMu     sync.Mutex
	inbox    []Message    // guarded by inMu
	inboxLen atomic.Int32 // len(inbox), read without inMu
	// Jobs stored or in the inbox, which capacity bounds, are in - out:
	// reserve counts in, remove counts out (under mu). A producer reads out
	// only when its last reading, outSeen, says the queue is full (out only
	// grows, so an old reading can only overstate the count).
	in      atomic.Int64
	outSeen atomic.Int64
	_       [64]byte

	sleepers atomic.Int32 // receivers about to wait or waiting in recvWait
	_        [64]byte

	mu     sync.Mutex // guards every field below
	out    atomic.Int64
	opened bool
	spare  []Message // the inbox's other buffer, swapped in by drain

	ids    map[string]*entry // stored jobs by ID, but for fresh ones (see stored)
	fresh  string            // the prefix of the fresh IDs stored, once there is one
	keys   map[string]*dlist // the jobs of each ordering key
	all    dlist             // stored jobs in enqueue order
	ready  readyQueue
	timed  timeHeap // delayed jobs by readyAt
	leased dlist    // leased jobs by lease end (see lease)
	held   int      // leased jobs without an end yet, not in leased (see ackNext)
	seq    uint64   // enqueue order

	seen     map[string]time.Time // ID -> enqueue time, within the horizon
	seenFIFO []seenID             // seen in enqueue order, for pruning
	seenHead int

	// The dead letters, oldest first, and by ID (an ID has at most one):
	// redriving or purging one costs O(1) however many there are.
	dead    list.List // of *DeadMessage
	deadIDs map[string]*list.Element

	// queuedLater holds the jobs queued behind a busy ordering key that
	// have a NotBefore, for Stats: such a job counts as delayed until its
	// NotBefore.
	queuedLater map[*entry]struct{}

	free     *entry    // recycled entries
	recvWait waitList  // receivers waiting for a ready job
	roomWait waitList  // blocked producers waiting for room
	idle     []*waiter // recycled waiters
	keyFree  []*dlist
}

type seenID struct {
	id string
	at time.Time
}

// entry states.
const (
	stateQueued  = iota // behind a busy ordering key
	stateReady          // in ready (its ring or its heap)
	stateDelayed        // in timed
	stateLeased         // in leased, or held (see ackNext)
)

type entry struct {
	msg        Message
	state      int
	seq        uint64 // enqueue order
	gen        uint64 // generation of the current lease
	attempt    int
	readyAt    time.Time
	leaseEnd   time.Time
	leaseStart time.Time
	history    []Attempt
	delivered  bool // Receive has leased e at least once
	held       bool // leased without an end (see ackNext), not in m.leased
	heapIdx    int  // index in the heap holding e, -1 if none
	ln         [numLists]links
	key        *dlist // the list of e's ordering key, if it has one
}

// The lists an entry is on at once, each threaded through its own links.
const (
	onAll   = iota // Memory.all, or the free list once the entry is recycled
	onLease        // Memory.leased
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

// readyQueue holds the ready jobs in enqueue order. Jobs that become ready
// in enqueue order (the common case: fresh jobs) go to a FIFO ring at O(1);
// the others (retries, released jobs, a key's next job) go to a heap.
type readyQueue struct {
	ring    []*entry
	head    int
	ringMax uint64 // highest seq ever put in the ring
	heap    seqHeap
}

func (r *readyQueue) len() int { return len(r.ring) - r.head + r.heap.Len() }

func (r *readyQueue) push(e *entry) {
	if e.seq > r.ringMax {
		r.ringMax = e.seq
		r.ring = append(r.ring, e)
		return
	}
	heap.Push(&r.heap, e)
}

// pop removes the ready job enqueued first. r must not be empty.
func (r *readyQueue) pop() *entry {
	if r.head < len(r.ring) && (r.heap.Len() == 0 || r.ring[r.head].seq < r.heap[0].seq) {
		return r.popRing()
	}
	return heap.Pop(&r.heap).(*entry)
}

func (r *readyQueue) popRing() *entry {
	e := r.ring[r.head]
	r.ring[r.head] = nil
	r.head++
	if r.head == len(r.ring) {
		r.ring, r.head = r.ring[:0], 0
	} else if r.head >= 64 && r.head*2 >= len(r.ring) {
		n := copy(r.ring, r.ring[r.head:])
		clear(r.ring[n:])
		r.ring, r.head = r.ring[:n], 0
	}
	return e
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
	if r.ring[r.head] != e {
		panic("queue: internal error: removing a ready job that is not the oldest")
	}
	r.popRing()
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

type waiter struct {
	c     chan struct{} // capacity 1: a wake-up
	timer *time.Timer
}

// waitList is a FIFO of waiters. At most one of them is woken at a time:
// while a woken waiter has not yet taken the lock again (waking > 0), a new
// signal is dropped, because that waiter will look at the state anyway. A
// woken waiter that leaves more work than it takes passes the wake-up on.
// So a stream of jobs wakes a sleeping receiver only when none is already
// on its way, not once per job.
type waitList struct {
	ws     []*waiter
	waking int // waiters signalled that have not yet taken m.mu again
}

// wakeable reports whether signal would wake a waiter: one waits, and none
// is already on its way (it passes the wake-up on if it leaves work behind).
func (l *waitList) wakeable() bool { return len(l.ws) > 0 && l.waking == 0 }

// NewMemory returns an empty in-memory backend.
func NewMemory() *Memory {
	m := &Memory{
		ids:  make(map[string]*entry),
		keys: make(map[string]*dlist),
		seen: make(map[string]time.Time),

		deadIDs:     make(map[string]*list.Element),
		queuedLater: make(map[*entry]struct{}),
		kick:        make(chan struct{}, 1),
		leased:      dlist{on: onLease},
	}
	return m
}

// carriesValues marks backends that keep payload values in process.
func (m *Memory) carriesValues() {}

// Open implements Backend.
func (m *Memory) Open(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opened {
		return fmt.Errorf("queue: memory backend already opened")
	}
	m.opened = true
	m.cfg = cfg
	return nil
}

// Enqueue implements Backend.
//
// A job with an ID generated by the queue for it (no duplicate possible),
// no ordering key and no delay, in a backend without a dedup horizon, takes
// a fast path when there is room: it is appended to an inbox under a lock
// of its own, which a receiver that runs out of ready jobs (or Stats, or
// any other enqueue) moves into the queue, in order. Any other enqueue
// takes the main lock and moves the inbox first, so jobs keep their
// enqueue order.
func (m *Memory) Enqueue(ctx context.Context, msg Message) (EnqueueResult, error) {
	now := msg.EnqueuedAt
	if now.IsZero() {
		now = m.clk.now()
		msg.EnqueuedAt = now
	}
	var res EnqueueResult
	fast := msg.fresh && msg.Key == "" && msg.NotBefore.IsZero() && m.cfg.DedupHorizon == 0
	if fast && !m.reserve() {
		// Full. Such a job cannot be a duplicate, and moving the inbox
		// does not make room: only DropOldest needs the main path.
		switch m.cfg.Overflow {
		case Reject:
			return res, ErrFull
		case DropNewest:
			return res, ErrDropped
		case Block:
			if err := m.waitRoom(ctx); err != nil {
				return res, err
			}
		default:
			fast = false
		}
	}
	if fast {
		m.inMu.Lock()
		m.inbox = append(m.inbox, msg)
		first := len(m.inbox) == 1
		m.inboxLen.Store(int32(len(m.inbox)))
		m.inMu.Unlock()
		// A receiver that found nothing counts itself in sleepers before it
		// looks at the inbox one last time, and waits only if it is empty:
		// one of the two sees the other. Only the job that made the inbox
		// non-empty needs to wake one: whoever drains it drains the jobs
		// after it too, and a receiver woken for a job that leaves more
		// behind wakes the next.
		if first && m.sleepers.Load() > 0 {
			select {
			case m.kick <- struct{}{}:
			default: // a kick is pending: a receiver will drain
			}
		}
		return res, nil
	}
	m.mu.Lock()
	for {
		m.drain()
		if m.taken(&msg, now) {
			m.passRoom()
			m.mu.Unlock()
			return res, ErrDuplicate
		}
		if m.reserve() {
			break
		}
		switch m.cfg.Overflow {
		case Reject:
			m.mu.Unlock()
			return res, ErrFull
		case DropNewest:
			m.mu.Unlock()
			return res, ErrDropped
		case DropOldest:
			victim := m.all.head
			for victim != nil && victim.state == stateLeased {
				victim = victim.ln[onAll].next
			}
			if victim == nil {
				m.mu.Unlock()
				return res, ErrFull
			}
			res.Evicted = append(res.Evicted, victim.msg.ID)
			m.bury(victim, ReasonOverflow, Attempt{Number: victim.attempt, Start: now, End: now, Error: errEvicted.Error()}, now)
			continue
		}
		// Block.
		if err := m.wait(ctx, &m.roomWait, time.Time{}, nil); err != nil {
			m.mu.Unlock()
			return res, err
		}
		now = m.clk.now()
	}
	if m.cfg.DedupHorizon > 0 {
		m.seen[msg.ID] = now
		m.seenFIFO = append(m.seenFIFO, seenID{msg.ID, now})
	}
	m.store(msg, msg.NotBefore, now)
	m.passRoom()
	m.mu.Unlock()
	return res, nil
}

// waitRoom waits for room and reserves it, for a job of the fast path of
// Enqueue under Block. It holds mu only to wait: the job itself goes to the
// inbox, so a blocked producer does not keep the consumers from mu by
// moving the inbox and storing its job there.
func (m *Memory) waitRoom(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for !m.reserve() {
		if err := m.wait(ctx, &m.roomWait, time.Time{}, nil); err != nil {
			return err
		}
	}
	m.passRoom()
	return nil
}

// passRoom wakes a blocked producer if there is room: a producer woken for
// room passes the wake-up on when it leaves room behind. m.mu held.
func (m *Memory) passRoom() {
	if m.cfg.Capacity == 0 || m.in.Load()-m.out.Load() < int64(m.cfg.Capacity) {
		m.signal(&m.roomWait)
	}
}

// reserve takes room for one job, if there is any (see in and out).
func (m *Memory) reserve() bool {
	if m.cfg.Capacity == 0 {
		m.in.Add(1)
		return true
	}
	c := int64(m.cfg.Capacity)
	for {
		n := m.in.Load()
		if n-m.outSeen.Load() >= c {
			out := m.out.Load()
			m.outSeen.Store(out) // racing stores may move it back: it stays a past reading
			if n-out >= c {
				return false
			}
		}
		if m.in.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// drainIfIdle drains the inbox only when no job is ready: every job in the
// inbox was enqueued after every stored one, so taking the ready jobs first
// keeps the order, and the inbox is drained in batches, not a job at a time
// against the producer appending to it. m.mu held.
func (m *Memory) drainIfIdle() {
	if m.ready.len() == 0 {
		m.drain()
	}
}

// drain moves the jobs of the inbox into the queue, in order, and wakes a
// receiver for them. m.mu held.
func (m *Memory) drain() {
	if m.inboxLen.Load() == 0 {
		return
	}
	m.inMu.Lock()
	msgs := m.inbox
	m.inbox, m.spare = m.spare[:0], nil
	m.inboxLen.Store(0)
	m.inMu.Unlock()
	for i := range msgs {
		m.store(msgs[i], time.Time{}, msgs[i].EnqueuedAt)
		msgs[i] = Message{} // do not keep the payload
	}
	m.spare = msgs[:0]
}

// store adds msg as a new job, ready at notBefore. m.mu held.
func (m *Memory) store(msg Message, notBefore, now time.Time) {
	e := m.newEntry()
	e.msg = msg
	e.msg.Attempt = 0
	if e.msg.EnqueuedAt.IsZero() {
		e.msg.EnqueuedAt = now
	}
	m.seq++
	e.seq = m.seq
	if msg.fresh {
		m.noteFresh(msg.ID)
	} else {
		m.ids[msg.ID] = e
	}
	m.all.push(e)
	if msg.Key != "" {
		k := m.keys[msg.Key]
		if k == nil {
			k = m.newKey()
			m.keys[msg.Key] = k
		}
		e.key = k
		k.push(e)
		if k.head != e {
			e.state = stateQueued
			if !notBefore.IsZero() {
				m.queuedLater[e] = struct{}{}
			}
			return
		}
	}
	m.schedule(e, notBefore, now)
}

// taken reports whether the ID of msg is stored or seen within the horizon.
// An ID the queue has just generated is neither, by construction: only the
// horizon is pruned then. m.mu held.
func (m *Memory) taken(msg *Message, now time.Time) bool {
	if m.cfg.DedupHorizon > 0 {
		m.prune(now)
	}
	if msg.fresh {
		return false
	}
	if m.stored(msg.ID) {
		return true
	}
	at, ok := m.seen[msg.ID]
	return ok && now.Sub(at) < m.cfg.DedupHorizon
}

// prune forgets the IDs seen before the horizon. m.mu held.
func (m *Memory) prune(now time.Time) {
	for m.seenHead < len(m.seenFIFO) {
		s := m.seenFIFO[m.seenHead]
		if now.Sub(s.at) < m.cfg.DedupHorizon {
			break
		}
		if at, ok := m.seen[s.id]; ok && at.Equal(s.at) {
			delete(m.seen, s.id)
		}
		m.seenFIFO[m.seenHead] = seenID{}
		m.seenHead++
	}
	if m.seenHead > 0 && m.seenHead*2 >= len(m.seenFIFO) {
		n := copy(m.seenFIFO, m.seenFIFO[m.seenHead:])
		clear(m.seenFIFO[n:])
		m.seenFIFO = m.seenFIFO[:n]
		m.seenHead = 0
	}
}

// stored reports whether a job with ID id is stored. m.mu held.
//
// A job whose ID the queue generated for it (Message.fresh) is not put in
// ids: no other job can have that ID when it is stored, so the map insert
// and delete would be spent on every job only to catch a producer that
// later enqueues the same ID explicitly. Such an ID starts with the prefix
// of the queue that generated it; for an ID with the prefix m.fresh, the
// stored jobs are searched (O(n), and only for such IDs).
func (m *Memory) stored(id string) bool {
	if _, ok := m.ids[id]; ok {
		return true
	}
	if len(id) != idLen || m.fresh == "" || id[:idLen/2] != m.fresh {
		return false
	}
	for e := m.all.head; e != nil; e = e.ln[onAll].next {
		if e.msg.fresh && e.msg.ID == id {
			return true
		}
	}
	return false
}

// noteFresh remembers the prefix of the fresh ID id: the prefix of the one
// Queue this Memory serves (Open refuses a second). m.mu held.
func (m *Memory) noteFresh(id string) {
	if m.fresh == "" && len(id) == idLen {
		m.fresh = id[:idLen/2]
	}
}

// newEntry returns a recycled entry (remove cleared it) or a new one.
func (m *Memory) newEntry() *entry {
	e := m.free
	if e == nil {
		return &entry{heapIdx: -1}
	}
	m.free = e.ln[onAll].next
	e.ln[onAll].next = nil
	return e
}

func (m *Memory) newKey() *dlist {
	if n := len(m.keyFree); n > 0 {
		k := m.keyFree[n-1]
		m.keyFree = m.keyFree[:n-1]
		return k
	}
	return &dlist{on: onKey}
}

// schedule makes e ready at notBefore (now if zero or past). m.mu held.
func (m *Memory) schedule(e *entry, notBefore, now time.Time) {
	if len(m.queuedLater) > 0 {
		delete(m.queuedLater, e)
	}
	if !notBefore.IsZero() && notBefore.After(now) {
		e.state = stateDelayed
		e.readyAt = notBefore
		heap.Push(&m.timed, e)
		m.signal(&m.recvWait) // a receiver recomputes its wake-up time
		return
	}
	e.state = stateReady
	m.ready.push(e)
	m.signal(&m.recvWait)
}

// signal wakes the first waiter of l, unless one is already on its way.
// m.mu held.
func (m *Memory) signal(l *waitList) {
	if !l.wakeable() {
		return
	}
	n := len(l.ws)
	w := l.ws[0]
	copy(l.ws, l.ws[1:])
	l.ws[n-1] = nil
	l.ws = l.ws[:n-1]
	l.waking++
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// wait releases m.mu until signalled, deadline (if not zero) or ctx, and
// reacquires it. It returns the ctx cause if ctx ended.
//
// kick, if not nil, also ends the wait (see Memory.kick).
func (m *Memory) wait(ctx context.Context, l *waitList, deadline time.Time, kick <-chan struct{}) error {
	var w *waiter
	if n := len(m.idle); n > 0 {
		w = m.idle[n-1]
		m.idle = m.idle[:n-1]
	} else {
		w = &waiter{c: make(chan struct{}, 1)}
	}
	l.ws = append(l.ws, w)
	var tc <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if w.timer == nil {
			w.timer = time.NewTimer(d)
		} else {
			w.timer.Reset(d)
		}
		tc = w.timer.C
	}
	m.mu.Unlock()
	var err error
	select {
	case <-w.c:
	case <-tc:
	case <-kick:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	m.mu.Lock()
	// Leave the wait list if still on it. A waiter no longer on the list
	// was signalled; if it is leaving because of ctx, it passes the
	// wake-up on so that no one else misses it.
	woken := true
	for i, x := range l.ws {
		if x == w {
			n := copy(l.ws[i:], l.ws[i+1:])
			l.ws[i+n] = nil
			l.ws = l.ws[:i+n]
			woken = false
			break
		}
	}
	select {
	case <-w.c:
	default:
	}
	if woken {
		l.waking--
		if err != nil {
			m.signal(l)
		}
	}
	m.idle = append(m.idle, w)
	return err
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
		e.gen++ // the lease holder's delivery is now stale
		e.history = append(e.history, Attempt{Number: e.attempt, Start: e.leaseStart, End: now, Error: ErrLeaseExpired.Error()})
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
	return t
}

// Receive implements Backend.
func (m *Memory) Receive(ctx context.Context, lease time.Duration, d *Delivery) error {
	if lease <= 0 {
		return fmt.Errorf("queue: lease %v must be positive", lease)
	}
	now := m.clk.now() // outside the lock; read again after a wait
	m.mu.Lock()
	for {
		if err := ctx.Err(); err != nil {
			// This receiver may have been woken for a job: pass it on.
			m.signal(&m.recvWait)
			m.mu.Unlock()
			return context.Cause(ctx)
		}
		m.promote(now)
		m.drainIfIdle()
		if m.ready.len() > 0 {
			m.take(now, lease, d)
			m.mu.Unlock()
			return nil
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
			return err
		}
		now = m.clk.now()
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
	d.fresh = false // only the job the queue generated the ID for has it
	d.Attempt = e.attempt
	d.Redelivered = e.delivered
	e.delivered = true
	d.at = now
	d.Token = e
	d.Seq = e.gen
	// Wake a waiting receiver if a job is still ready or in the inbox (this
	// receiver may have been woken for the inbox, and took a job that became
	// ready meanwhile instead), or if this lease now ends first: a receiver
	// that went to sleep before it was taken must recompute its wake-up
	// time, or it would miss the lease's expiry.
	// (Waiters are checked first: inboxLen sits on a line the producers
	// write on every job.)
	if m.recvWait.wakeable() && (m.ready.len() > 0 || m.inboxLen.Load() > 0 || m.leased.head == e) {
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
	e.leaseEnd = m.clk.now().Add(lease)
	m.lease(e)
	// A job that was held (see ackNext) may now end first: a sleeping
	// receiver must recompute its wake-up time (see take).
	if m.leased.head == e && m.recvWait.wakeable() {
		m.signal(&m.recvWait)
	}
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
	now := m.clk.now()
	var at time.Time
	if delay > 0 {
		at = now.Add(delay)
	}
	m.schedule(e, at, now)
	return nil
}

// Release implements Backend.
func (m *Memory) Release(ctx context.Context, d *Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.unlease(d)
	if err != nil {
		return err
	}
	e.gen++
	e.attempt--
	now := m.clk.now()
	m.schedule(e, time.Time{}, now)
	return nil
}

// Bury implements Backend.
func (m *Memory) Bury(ctx context.Context, d *Delivery, reason Reason, a Attempt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.leasedEntry(d)
	if err != nil {
		return err
	}
	m.bury(e, reason, a, m.clk.now())
	return nil
}

// bury moves e to the dead letters. m.mu held.
func (m *Memory) bury(e *entry, reason Reason, a Attempt, now time.Time) {
	switch e.state {
	case stateReady:
		m.ready.remove(e)
	case stateDelayed:
		heap.Remove(&m.timed, e.heapIdx)
	case stateLeased:
		m.dropLease(e)
	}
	dm := &DeadMessage{Message: e.msg, Reason: reason, At: now}
	dm.Attempt = e.attempt
	dm.History = append(make([]Attempt, 0, len(e.history)+1), e.history...)
	dm.History = append(dm.History, a)
	if old := m.deadIDs[dm.ID]; old != nil {
		// A later job with the same ID: the newer dead letter replaces
		// the older, so that Redrive and Purge name one.
		m.dropDead(old)
	}
	m.deadIDs[dm.ID] = m.dead.PushBack(dm)
	m.remove(e)
}

// remove forgets the stored entry e (not in any heap), unblocks its key and
// recycles it. m.mu held.
func (m *Memory) remove(e *entry) {
	m.out.Add(1)
	if !e.msg.fresh {
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
				now = m.clk.now()
			}
			m.schedule(k.head, k.head.msg.NotBefore, now)
		}
	}
	e.gen++
	*e = entry{gen: e.gen, history: e.history[:0], heapIdx: -1}
	e.ln[onAll].next = m.free
	m.free = e
	m.signal(&m.roomWait)
}

// DeadLetters implements Backend. The listing is a snapshot taken when the
// iteration starts.
func (m *Memory) DeadLetters(ctx context.Context) iter.Seq2[DeadMessage, error] {
	return func(yield func(DeadMessage, error) bool) {
		m.mu.Lock()
		snap := make([]DeadMessage, 0, m.dead.Len())
		for el := m.dead.Front(); el != nil; el = el.Next() {
			dm := *el.Value.(*DeadMessage)
			dm.fresh = false // see take
			dm.History = slices.Clone(dm.History)
			snap = append(snap, dm)
		}
		m.mu.Unlock()
		for _, d := range snap {
			if err := ctx.Err(); err != nil {
				yield(DeadMessage{}, context.Cause(ctx))
				return
			}
			if !yield(d, nil) {
				return
			}
		}
	}
}

// dropDead deletes the dead letter el. m.mu held.
func (m *Memory) dropDead(el *list.Element) {
	delete(m.deadIDs, el.Value.(*DeadMessage).ID)
	m.dead.Remove(el)
}

// Redrive implements Backend. The redriven job skips the dedup horizon and
// capacity's Block (it fails with ErrFull instead) but not its own ID.
func (m *Memory) Redrive(ctx context.Context, id string) error {
	m.mu.Lock()
	dl := m.deadIDs[id]
	if dl == nil {
		m.mu.Unlock()
		return ErrNotFound
	}
	// Not m.stored(id), whose search for generated IDs would make
	// redriving every dead letter quadratic: the one job the queue gave
	// this ID to is this dead letter (the queue refuses an explicit ID it
	// has yet to generate), so a stored job with it was enqueued with it
	// explicitly, or redriven, and is in ids.
	m.drain()
	if _, ok := m.ids[id]; ok {
		m.mu.Unlock()
		return ErrDuplicate
	}
	if !m.reserve() {
		m.mu.Unlock()
		return ErrFull
	}
	msg := dl.Value.(*DeadMessage).Message
	msg.fresh = false // in ids from now on
	m.dropDead(dl)
	// A redriven job is a new job: fresh attempts, new enqueue time, no
	// delay or start-by deadline; the dedup horizon does not apply to it.
	msg.EnqueuedAt, msg.NotBefore, msg.StartBy = time.Time{}, time.Time{}, time.Time{}
	m.store(msg, time.Time{}, m.clk.now())
	m.mu.Unlock()
	return nil
}

// Purge implements Backend.
func (m *Memory) Purge(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dl := m.deadIDs[id]
	if dl == nil {
		return ErrNotFound
	}
	m.dropDead(dl)
	return nil
}

// Stats implements Backend.
func (m *Memory) Stats(ctx context.Context) (BackendStats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.now()
	m.drain()
	m.promote(now)
	s := BackendStats{
		InFlight: m.leased.n + m.held,
		Delayed:  m.timed.Len(),
		Dead:     m.dead.Len(),
	}
	for e := range m.queuedLater {
		if e.msg.NotBefore.After(now) {
			s.Delayed++
		}
	}
	s.Ready = m.all.n - s.InFlight - s.Delayed
	if m.all.head != nil {
		s.Oldest = m.all.head.msg.EnqueuedAt
	}
	return s, nil
}
