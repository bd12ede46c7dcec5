package memory

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/clock"

	"github.com/corral-go/corral/queue/driver"
)

// Backend is the in-memory backend, the default of queue.New. It keeps
// payload values (no encoding) in the process's memory, and implements
// [driver.InProcess].
//
// Nothing survives the process: when it exits, every job a Backend stores
// (ready, delayed, in flight) and every dead letter is lost. A consumer
// that stops with its Close leaves the jobs it did not take stored here,
// for the next consumer of the same queue in this process; to handle them
// before the process exits, stop it with its Drain, which works the
// backlog off first. A backend that keeps jobs on a broker (such as
// queue/jetstream) keeps them across processes.
//
// A Backend outlives the consumers that drain it: jobs left by a closed
// consumer are delivered to the next one. Its time-based behaviour (delays,
// leases, the dedup horizon) follows the time package, so it runs on virtual
// time inside a testing/synctest bubble when created there.
//
// With a dedup horizon (driver.Config.DedupHorizon), a Backend forgets an
// ID, and gives back the memory it took, at most horizon + horizon/8 after
// the ID's enqueue, whether or not calls come: a timer the Backend owns,
// which Close stops, sweeps the expired IDs.
//
// A Backend serves one queue: Open fails if called twice. The zero Backend
// is ready to use once opened, as queue.New opens the backend it is given
// (queue.WithBackend(&memory.Backend{})); its Enqueue and Receive panic if
// called before Open, where [New]'s work at once. Backend is safe for
// concurrent use.
type Backend struct {
	// The fields are grouped by who writes them, each group on cache lines
	// of its own (the blank pads), so that the producers' writes and the
	// consumers' writes do not evict each other's lines on every job.

	// Written once (cfg by Open, before any other call; kick by New)
	// or once a second (clk's anchor); read by everyone.
	clk    clock.Anchored // reads the time (time.Now, at half the cost)
	epoch  clock.Epoch    // the origin of the lease times (see mono); set by init
	cfg    driver.Config
	kick   chan struct{} // capacity 1: wakes a waiting receiver for the inbox, without mu
	closed atomic.Bool   // set once by Close (under mu), never reset
	_      [64]byte

	// The fast path of Enqueue (see Enqueue) appends to inbox under inMu,
	// not mu, so that a producer does not contend with the consumers for
	// mu. The inbox is moved into the queue (drain) by a receiver that finds
	// no ready job, and by every other call that must see all the jobs.
	inMu     sync.Mutex
	inbox    []inMsg      // guarded by inMu
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
	spare  []inMsg // the inbox's other buffer, swapped in by drain

	ids    map[string]*entry // stored jobs by ID, but for fresh ones (see stored)
	fresh  string            // the prefix of the fresh IDs stored, once there is one
	keys   map[string]*dlist // the jobs of each ordering key
	all    dlist             // stored jobs in enqueue order
	ready  readyQueue
	timed  timeHeap // delayed jobs by readyAt
	leased dlist    // leased jobs by lease end (see lease)
	seq    uint64   // enqueue order

	seen    dedup   // the IDs within the horizon (see memory_dedup.go)
	uniques uniques // the unique keys held (see unique.go)
	rate    rate    // the rate limit's window (see rate.go), under a lock of its own
	// The sweep of the horizon (see armSweep): its timer, made by the first
	// arming, whether it is due or running, and the sweeps armed and not
	// yet done, which Close waits for.
	sweepTimer *time.Timer
	sweepArmed bool
	sweeps     sync.WaitGroup

	// The dead letters, oldest first, and by ID (an ID has at most one):
	// redriving or purging one costs O(1) however many there are. At most
	// cfg's dead-letter limit are kept: bury evicts the oldest.
	dead    list.List // of *DeadMessage
	deadIDs map[string]*list.Element

	paused bool // set and cleared by SetPaused: Receive hands out no job while set

	// Peak sizes of the maps since they were made, so that they are made
	// anew, small, once the backend is empty (see trim).
	idsPeak, keysPeak, deadPeak, laterPeak int

	// queuedLater holds the jobs queued behind a busy ordering key that
	// have a NotBefore, for Stats: such a job counts as delayed until its
	// NotBefore.
	queuedLater map[*entry]struct{}

	free     *entry    // recycled entries
	freeN    int       // entries on free
	recvWait waitList  // receivers waiting for a ready job
	roomWait waitList  // blocked producers waiting for room
	idle     []*waiter // recycled waiters
	keyFree  []*dlist
}

// New returns an empty in-memory backend, ready to use.
func New() *Backend {
	m := &Backend{}
	m.init()
	return m
}

// init makes what a zero Backend lacks.
func (m *Backend) init() {
	m.ids = make(map[string]*entry)
	m.keys = make(map[string]*dlist)
	m.deadIDs = make(map[string]*list.Element)
	m.queuedLater = make(map[*entry]struct{})
	m.kick = make(chan struct{}, 1)
	m.leased = dlist{on: onLease}
	m.epoch = clock.Start()
}

// mono returns the backend's monotonic time, in which it keeps its leases:
// the time since init. (A lease taken with the ack of a job is every job's
// path: a duration costs it less than a time.Time, to read and to store.)
func (m *Backend) mono() time.Duration { return m.epoch.Since() }

// clock returns the time now and, from the same reading, mono(): one
// reading of the clock, not two.
func (m *Backend) clock() (time.Time, time.Duration) {
	now := m.clk.Now()
	return now, m.epoch.At(now)
}

// unopened is the panic of a zero Backend used before Open.
const unopened = "memory: zero Backend used before Open: use memory.New, or give it to queue.New"

// Self implements driver.InProcess: m's fast paths are its own.
func (m *Backend) Self() driver.Backend { return m }

// Open implements driver.Backend.
func (m *Backend) Open(ctx context.Context, cfg driver.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opened {
		return errors.New("memory: backend already opened")
	}
	if m.kick == nil { // the zero Backend
		m.init()
	}
	m.opened = true
	m.cfg = cfg.WithDefaults() // its DeadLetterLimit is the limit
	return nil
}

// Close implements driver.Backend. It takes nothing back (it holds no broker
// resources) but its dedup sweep, which it stops and waits for: it refuses
// later Enqueue and Receive calls with ErrClosed and wakes those waiting,
// which return ErrClosed. The jobs and dead letters it stores are left to
// the garbage collector with the Backend; the other methods still work on
// them.
func (m *Backend) Close(ctx context.Context) error {
	if m.kick == nil { // a zero Backend never opened: nothing waits
		m.closed.Store(true)
		return nil
	}
	m.mu.Lock()
	m.closed.Store(true)
	m.broadcast(&m.recvWait)
	m.broadcast(&m.roomWait)
	if m.sweepTimer != nil && m.sweepTimer.Stop() {
		m.sweeps.Done() // the sweep armed will not run
	}
	m.mu.Unlock()
	m.sweeps.Wait() // for a sweep that began: it sees m.closed and returns
	return nil
}

// Memory the backend keeps for reuse once it is empty, so that a
// drained queue gives back what a deep one took: records and buffers beyond
// these sizes are dropped, and maps that grew past keepMap are made anew.
const (
	keepFree = 1024 // recycled entries
	keepBuf  = 4096 // slots of the ring, heaps and inbox buffers
	keepMap  = 1024 // entries a map may have had
)

// trim drops what the empty backend keeps beyond its keep sizes. Each step
// costs at most keepFree, however deep the queue was: what is dropped is
// left to the garbage collector, not walked. It runs only when there is
// something to drop beyond twice the keep sizes, so that a queue that keeps
// emptying at a modest depth does not trim over and over. m.mu held.
func (m *Backend) trim() {
	if m.freeN > 2*keepFree {
		e := m.free
		for range keepFree - 1 {
			e = e.ln[onAll].next
		}
		e.ln[onAll].next = nil
		m.freeN = keepFree
	}
	if m.ready.ring.Cap() > 2*keepBuf {
		m.ready.ring.Reset()
	}
	if cap(m.ready.heap) > 2*keepBuf && len(m.ready.heap) == 0 {
		m.ready.heap = nil
	}
	if cap(m.timed.es) > 2*keepBuf && len(m.timed.es) == 0 {
		m.timed.es = nil
	}
	m.trimMaps()
}

// trimMaps makes anew, small, the maps that grew past twice keepMap and are
// empty (or, for the dead letters, below keepMap). m.mu held.
func (m *Backend) trimMaps() {
	if m.idsPeak > 2*keepMap && len(m.ids) == 0 {
		m.ids, m.idsPeak = make(map[string]*entry), 0
	}
	if m.keysPeak > 2*keepMap && len(m.keys) == 0 {
		m.keys, m.keysPeak = make(map[string]*dlist), 0
		clear(m.keyFree)
		m.keyFree = nil
	}
	if m.laterPeak > 2*keepMap && len(m.queuedLater) == 0 {
		m.queuedLater, m.laterPeak = make(map[*entry]struct{}), 0
	}
	if m.deadPeak > 2*keepMap && len(m.deadIDs) < keepMap {
		ids := make(map[string]*list.Element, len(m.deadIDs))
		for id, el := range m.deadIDs {
			ids[id] = el
		}
		m.deadIDs, m.deadPeak = ids, len(ids)
	}
}

// Stats implements driver.Backend.
func (m *Backend) Stats(ctx context.Context) (driver.Stats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.Now()
	m.drain()
	m.promote(now, m.mono())
	s := driver.Stats{
		InFlight: m.leased.n,
		Delayed:  m.timed.Len(),
		Dead:     m.dead.Len(),
		Paused:   m.paused,
	}
	for e := range m.queuedLater {
		if e.coldMsg().NotBefore.After(now) {
			s.Delayed++
		}
	}
	s.Ready = m.all.n - s.InFlight - s.Delayed
	if m.all.head != nil {
		s.Oldest = m.all.head.enqueuedAt
	}
	return s, nil
}

var _ driver.InProcess = (*Backend)(nil)
