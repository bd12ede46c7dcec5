package pool

import (
	"context"
	"runtime/pprof"
	"strconv"
	"sync"

	"github.com/corral-go/corral/internal/clock"
	"github.com/corral-go/corral/internal/ring"
	"github.com/corral-go/corral/internal/sample"

	"github.com/corral-go/corral/internal/wake"
)

// A Pool runs tasks on at most N reused goroutines (workers), with at most Q tasks waiting in
// its queue. What happens when both are full is decided by the pool's Overflow.
//
// A Pool is safe for concurrent use by any number of goroutines. It must be created with New
// and must not be copied: the methods of a zero Pool panic with "pool: zero Pool: use
// pool.New", in the calling goroutine, except Stats, which returns zero counts. Its owner calls
// Close, which returns only after every task that started has returned and every worker
// goroutine has exited.
type Pool struct {
	size     int // N: most workers; immutable
	capacity int // Q: most queued tasks; immutable
	opts     options
	epoch    clock.Epoch     // time origin for the durations in Stats and idle timeouts
	life     context.Context // ends when Close gives up waiting (or returns)
	kill     context.CancelCauseFunc
	labels   context.Context // carries the pprof label pool=name (WithName), or nil

	mu      sync.Mutex         // guards every field below
	queue   ring.Ring[task]    // FIFO queue (queue.go); grows up to capacity, never shrinks
	queued  int                // entries in queue that may still run
	idle    wake.List[*worker] // parked workers, newest woken first; counts those woken to fetch
	live    int                // worker goroutines
	inline  int                // tasks running in a caller's goroutine (CallerRuns, Group)
	blocked waitLine           // submitters blocked under Block (blocked.go)
	sampler sample.Sampler     // picks the tasks timed in a pool not timed as a whole
	closed  bool               // set once by Close, never reset
	drained bool               // closed && live == 0 && inline == 0; done is closed
	done    chan struct{}      // made by the first Close
	st      counters
}

// task is one queued or running task. Its zero value (fn == nil) is "no task".
type task struct {
	ctx context.Context // the submitter's context
	fn  func(context.Context) error
	res resolver // who learns the result: nil for Submit
	enq int64    // 1 + when it was submitted (Pool.clock) if the task is timed, else 0
}

// A resolver learns a task's final error: the task's own, a *PanicError, or why it did not run.
// resolve is called exactly once per accepted task, never under Pool.mu.
type resolver interface{ resolve(err error) }

// New returns a pool of at most workers goroutines and a queue of at most queue tasks. A queue
// of 0 means hand-off only: a task is accepted only if a worker can take it at once (or the
// Overflow says otherwise). New starts no goroutine: workers start on demand.
//
// New panics if workers < 1, queue < 0 or an option is nil.
func New(workers, queue int, opts ...Option) *Pool {
	if workers < 1 {
		panic("pool: New(" + strconv.Itoa(workers) + ", " + strconv.Itoa(queue) + "): workers must be at least 1")
	}
	if queue < 0 {
		panic("pool: New(" + strconv.Itoa(workers) + ", " + strconv.Itoa(queue) + "): negative queue capacity")
	}
	p := &Pool{size: workers, capacity: queue, epoch: clock.Start(), queue: ring.New[task](1024, queue)}
	p.opts.idle = defaultIdleTimeout
	for _, o := range opts {
		if o == nil {
			panic("pool: nil option")
		}
		o.apply(&p.opts)
	}
	if p.opts.hooks.OnError != nil {
		p.opts.timed = true // for ErrorEvent.Duration
	}
	if p.opts.timed {
		p.st.times = new(timings)
	}
	p.opts.hooks = p.opts.logHooks() // after timed: logging does not time tasks
	if p.opts.name != "" {
		p.labels = pprof.WithLabels(context.Background(), pprof.Labels("pool", p.opts.name))
	}
	p.life, p.kill = context.WithCancelCause(context.Background())
	return p
}

// errZeroPool is what the methods of a zero Pool panic with.
const errZeroPool = "pool: zero Pool: use pool.New"

// clock is the time since the pool was created, read from the monotonic clock.
func (p *Pool) clock() int64 { return int64(p.epoch.Since()) }

// stamp returns the enq of a task submitted now: 1 + clock in a timed pool (WithTimings), else
// 0 (the task is not timed, unless the sampler picks it: see stampLocked).
func (p *Pool) stamp() int64 {
	if !p.opts.timed {
		return 0
	}
	return 1 + p.clock()
}

// stampLocked times t, a task the pool's sampler picked (p.sampler.Take, called where Submit
// and Group.Go take the task in, and inlined there), if it is not timed already (in a timed
// pool, every task is): a pool not timed as a whole records the timings of a sample of its
// tasks (see Stats.Wait). The clock is read under Pool.mu, before t can reach a worker, and
// only for the tasks picked.
//
//go:noinline
func (p *Pool) stampLocked(t *task) {
	if t.enq == 0 {
		t.enq = 1 + p.clock()
	}
}

// clockFor returns clock if t is timed, else 0: an untimed task costs no clock reading.
func (p *Pool) clockFor(t *task) int64 {
	if t.enq == 0 {
		return 0
	}
	return p.clock()
}

// Submit hands fn to the pool and returns once the pool has accepted it (queued it, given it to
// a worker, or run it under CallerRuns) or refused it. It returns nil if fn was accepted;
// otherwise ErrClosed, context.Cause(ctx) (ctx ended before fn was accepted), ErrFull (Reject)
// or ErrDropped (DropNewest, or DropOldest with a queue of 0).
//
// fn runs with a context that carries ctx's values and ends when ctx ends, when Close gives up
// waiting for it (with a cause matching ErrClosed), or at any time after fn has returned. So
// fn must not use its context after it returns (the usual rule for a context handed to a
// callback), and work that fn hands on with it (a follow-up Submit, say) may find it ended.
// Hand on work that must outlive fn with context.WithoutCancel(ctx), or a context of your own.
//
// Under Block, a task that submits to its own pool waits for room like any submitter, and
// keeps its worker meanwhile: if the pool is full of such tasks (with one worker and a queue
// of 0, one is enough), none frees room, and each waits until the ctx it submitted with ends
// or the pool is closed (Close refuses blocked submitters with ErrClosed). Tasks that submit
// tasks use an Overflow that does not wait, a Group (whose Go never blocks), or room in the
// queue.
//
// If ctx is done when a worker picks fn up, fn does not run: it is skipped, counted in
// Stats.Skipped and reported to Hooks.OnDrop with reason ReasonExpired. What fn returns is
// counted in Stats and, if it is an error or fn panics, passed to Hooks.OnError.
//
// What the submitter did before calling Submit happens before fn starts (under CallerRuns,
// fn runs before Submit returns). fn's return synchronizes before Close returns, and before a
// Stats call that counts fn as ended returns. Submit itself does not allocate.
func (p *Pool) Submit(ctx context.Context, fn func(ctx context.Context) error) error {
	if fn == nil {
		panic("pool: Submit of a nil func")
	}
	return p.submit(ctx, fn, nil)
}

// placement says where placeLocked put a task.
type placement uint8

const (
	placedNowhere placement = iota // the pool is full
	placedIdle                     // given to a parked worker (w.next): wake it
	placedSpawn                    // a new worker must be started with it
	placedQueue                    // queued; if w != nil, wake w to come and fetch it
)

// placeLocked gives t to a new worker, the queue or an idle worker, and says which. It counts
// t as started unless it was queued.
//
// Queued tasks wake at most one parked worker at a time (Pool.idle counts it on its way): the woken
// worker wakes the next one if it finds more work than it can take. So a burst of submits costs a
// few wake-ups, not one per task, and no queued task waits while a worker sleeps.
func (p *Pool) placeLocked(t *task) (placement, *worker) {
	if p.live < p.size && p.idle.Len() == 0 {
		p.live++
		p.startedLocked()
		return placedSpawn, nil
	}
	if n := p.queue.Len(); n == p.capacity && p.queued < n {
		p.compactLocked() // make room taken by tombstones
	}
	if p.queue.Len() < p.capacity && p.blocked.head == nil {
		p.queue.PushFrom(t)
		p.queued++
		return placedQueue, p.wakeOneLocked()
	}
	if w, ok := p.idle.TakeNewest(); ok { // hand-off (queue of 0, or full while workers wake up)
		w.parked = false
		w.next = *t
		p.startedLocked()
		return placedIdle, w
	}
	return placedNowhere, nil
}

// afterPlace finishes a placement once Pool.mu is released.
func (p *Pool) afterPlace(how placement, w *worker, t task) {
	switch how {
	case placedIdle, placedQueue:
		if w != nil {
			w.wake <- struct{}{}
		}
	case placedSpawn:
		p.spawn(t)
	}
}

// submit panics on a zero Pool or a nil ctx, in the submitter's goroutine, before it counts.
func (p *Pool) submit(ctx context.Context, fn func(context.Context) error, res resolver) error {
	if p.size == 0 {
		panic(errZeroPool)
	}
	if ctx == nil {
		panic("pool: nil context")
	}
	if expired(ctx) {
		p.mu.Lock()
		p.st.submitted++
		p.st.rejected++
		p.mu.Unlock()
		return context.Cause(ctx)
	}
	t := task{ctx: ctx, fn: fn, res: res, enq: p.stamp()}
	p.mu.Lock()
	p.st.submitted++
	if p.closed {
		p.st.rejected++
		p.mu.Unlock()
		return ErrClosed
	}
	if p.sampler.Take() {
		p.stampLocked(&t)
	}
	how, w := p.placeLocked(&t)
	if how != placedNowhere {
		p.mu.Unlock()
		if how == placedSpawn || w != nil {
			p.afterPlace(how, w, t) // most submits queue the task with no worker to wake
		}
		return nil
	}
	return p.overflowUnlock(t)
}
