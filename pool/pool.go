package pool

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/corral-go/corral/internal/panics"
)

// A Pool runs tasks on at most N reused goroutines (workers), with at most Q tasks waiting in
// its queue. What happens when both are full is decided by the pool's overflow Policy.
//
// A Pool is safe for concurrent use by any number of goroutines. It must be created with New
// and must not be copied. Its owner calls Close, which returns only after every task that
// started has returned and every worker goroutine has exited.
type Pool struct {
	size     int // N: most workers; immutable
	capacity int // Q: most queued tasks; immutable
	opts     options
	epoch    time.Time       // time origin for the durations in Stats
	life     context.Context // ends when Close gives up waiting (or returns)
	kill     context.CancelCauseFunc

	mu      sync.Mutex    // guards every field below
	ring    []task        // FIFO queue; grows up to capacity, never shrinks
	head, n int           // ring[head] is the oldest of n entries (claimed group tasks included)
	queued  int           // entries in ring that may still run
	idle    []*worker     // parked workers, most recently parked last
	live    int           // worker goroutines
	inline  int           // tasks running in a caller's goroutine (CallerRuns, Group)
	waking  int           // workers woken to fetch queued work that have not fetched yet
	whead   *waiter       // blocked submitters, oldest first (Block)
	wtail   *waiter       //
	nwait   int           //
	free    *waiter       // recycled waiters, so that blocking does not allocate
	closed  bool          // set once by Close, never reset
	drained bool          // closed && live == 0 && inline == 0; done is closed
	done    chan struct{} // made by the first Close
	st      counters
}

// task is one queued or running task. Its zero value (fn == nil) is "no task".
type task struct {
	ctx context.Context // the submitter's context
	fn  func(context.Context) error
	res resolver // who learns the result: nil for Submit
	enq int64    // when it was queued (Pool.now)
}

// A resolver learns a task's final error: the task's own, a *PanicError, or why it did not run.
// resolve is called exactly once per accepted task, never under Pool.mu.
type resolver interface{ resolve(err error) }

// waiter is a submitter blocked under the Block policy.
type waiter struct {
	t     task
	ready chan struct{} // receives once, after done is set
	next  *waiter       // guarded by Pool.mu
	done  bool          // guarded by Pool.mu: admitted or refused
	err   error         // written before done is set; read after ready
}

// worker is the state of one worker goroutine.
type worker struct {
	wake     chan struct{} // capacity 1: one send per park
	next     task          // written under Pool.mu by whoever wakes the worker
	parked   bool          // guarded by Pool.mu: w is in Pool.idle
	parkedAt int64         // guarded by Pool.mu

	// Owned by the worker goroutine.
	timer *time.Timer
	armed bool            // timer is running (or fired and not yet received)
	key   context.Context // the parent of cur, if it is a pointer (cacheable); else nil
	cur   derived         // the context derived last, for the tasks of key
	held  []derived       // derived earlier, ancestors of cur: released with it
}

// New returns a pool of at most workers goroutines and a queue of at most queue tasks. A queue
// of 0 means hand-off only: a task is accepted only if a worker can take it at once (or the
// policy says otherwise). New starts no goroutine: workers start on demand.
//
// New panics if workers < 1 or queue < 0.
func New(workers, queue int, opts ...Option) *Pool {
	if workers < 1 {
		panic("pool: workers must be at least 1")
	}
	if queue < 0 {
		panic("pool: negative queue capacity")
	}
	p := &Pool{size: workers, capacity: queue, epoch: time.Now()}
	p.opts.idle = defaultIdleTimeout
	for _, o := range opts {
		if o != nil {
			o.apply(&p.opts)
		}
	}
	p.life, p.kill = context.WithCancelCause(context.Background())
	return p
}

// clock is the time since the pool was created, read from the monotonic clock.
func (p *Pool) clock() int64 { return int64(time.Since(p.epoch)) }

// now is clock, or 0 if the pool does not measure task timings (WithTimings).
func (p *Pool) now() int64 {
	if !p.opts.timed {
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
// waiting for it (with a cause matching ErrClosed), or, at any time after fn has returned,
// with context.Canceled: a worker keeps the context it derived for the next task submitted
// with the same ctx, and cancels it when it moves on to another one (never when the task it
// picks up was submitted with that context or one derived from it). So fn must not use its
// context after it returns (the usual rule for a context handed to a callback). Work that fn
// hands on with its context (a follow-up Submit, say) may therefore find it ended: a task
// whose context has ended when a worker picks it up is skipped as expired, and one that has
// started sees its context end like any other cancellation. Hand on work that must outlive fn
// with context.WithoutCancel(ctx), or with a context of your own.
//
// If ctx is done when a worker picks fn up, fn does not run: it is skipped, counted in
// Stats.Skipped and reported to the drop hook with reason Expired. What fn returns is counted
// in Stats and, if it is an error or fn panics, passed to the error hook.
//
// Submit itself does not allocate, and neither does running fn in steady state: a task
// submitted with context.Background() or context.TODO() runs with the pool's lifetime context,
// and a worker reuses the context it derived last while the tasks it runs keep coming with
// the same ctx (a pointer: the contexts of package context are). A ctx the worker has not
// just seen costs one derivation (a few allocations).
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
// Queued tasks wake at most one parked worker at a time (Pool.waking): the woken worker wakes
// the next one if it finds more work than it can take. So a burst of submits costs a few
// wake-ups, not one per task, and no queued task waits while a worker sleeps.
func (p *Pool) placeLocked(t *task) (placement, *worker) {
	if p.live < p.size && len(p.idle) == 0 {
		p.live++
		p.startedLocked(0)
		return placedSpawn, nil
	}
	if p.n == p.capacity && p.queued < p.n {
		p.compactLocked() // make room taken by tombstones
	}
	if p.n < p.capacity && p.whead == nil {
		p.push(t) // t.enq was read before taking the lock
		p.queued++
		return placedQueue, p.wakeOneLocked()
	}
	if n := len(p.idle); n > 0 { // hand-off (queue of 0, or full while workers wake up)
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		w.parked = false
		w.next = *t
		p.startedLocked(0)
		return placedIdle, w
	}
	return placedNowhere, nil
}

// wakeOneLocked picks a parked worker to come and fetch queued work, unless one is already
// on its way. The caller sends on its wake channel once Pool.mu is released.
func (p *Pool) wakeOneLocked() *worker {
	n := len(p.idle)
	if n == 0 || p.waking > 0 {
		return nil
	}
	w := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	w.parked = false
	p.waking++
	return w
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

func (p *Pool) submit(ctx context.Context, fn func(context.Context) error, res resolver) error {
	if ctx.Done() != nil && ctx.Err() != nil {
		p.mu.Lock()
		p.st.submitted++
		p.st.rejected++
		p.mu.Unlock()
		return context.Cause(ctx)
	}
	t := task{ctx: ctx, fn: fn, res: res, enq: p.now()}
	p.mu.Lock()
	p.st.submitted++
	if p.closed {
		p.st.rejected++
		p.mu.Unlock()
		return ErrClosed
	}
	how, w := p.placeLocked(&t)
	if how != placedNowhere {
		p.mu.Unlock()
		p.afterPlace(how, w, t)
		return nil
	}
	return p.overflow(t) // unlocks
}

// overflow applies the policy to t, which found the pool full. Pool.mu is held on entry and
// released before overflow returns.
func (p *Pool) overflow(t task) error {
	switch p.opts.policy {
	case Reject:
		p.st.rejected++
		p.mu.Unlock()
		return ErrFull
	case DropOldest:
		if p.n > 0 {
			// The queue is full of live tasks: placeLocked compacted away
			// the group tasks claimed by Wait before it found no room.
			old := p.pop()
			if !takeLocked(&old) {
				panic("pool: internal error: a claimed group task survived compaction")
			}
			p.queued--
			p.st.evicted++
			p.push(&t)
			p.queued++
			p.mu.Unlock()
			p.report(old, Evicted, nil)
			return nil
		}
		fallthrough // a queue of 0: nothing to evict
	case DropNewest:
		p.st.refused++
		p.mu.Unlock()
		if p.opts.onDrop != nil {
			p.opts.onDrop(t.ctx, Refused)
		}
		return ErrDropped
	case CallerRuns:
		p.st.inline++
		p.startedLocked(0)
		p.inline++
		p.mu.Unlock()
		p.runInline(t)
		return nil
	}
	// Block.
	w := p.free
	if w != nil {
		p.free = w.next
		w.next, w.done, w.err = nil, false, nil
	} else {
		w = &waiter{ready: make(chan struct{}, 1)}
	}
	w.t = t
	if p.wtail == nil {
		p.whead = w
	} else {
		p.wtail.next = w
	}
	p.wtail = w
	p.nwait++
	p.mu.Unlock()
	w.spin()
	var err error
	select {
	case <-w.ready:
		err = w.err
		p.mu.Lock()
	case <-t.ctx.Done():
		p.mu.Lock()
		if w.done { // admitted (or refused by Close) just before ctx ended
			p.mu.Unlock()
			<-w.ready
			err = w.err
			p.mu.Lock()
		} else {
			p.unlinkWaiterLocked(w)
			p.st.rejected++
			err = context.Cause(t.ctx)
		}
	}
	// Recycle w: it is out of the list and its ready channel is empty again.
	w.t = task{}
	w.next = p.free
	p.free = w
	p.mu.Unlock()
	return err
}

func (p *Pool) unlinkWaiterLocked(w *waiter) {
	var prev *waiter
	for c := p.whead; c != nil; prev, c = c, c.next {
		if c != w {
			continue
		}
		if prev == nil {
			p.whead = c.next
		} else {
			prev.next = c.next
		}
		if p.wtail == c {
			p.wtail = prev
		}
		c.next = nil
		p.nwait--
		return
	}
}

// popWaiterLocked removes the oldest blocked submitter, marking it done with err.
func (p *Pool) popWaiterLocked(err error) *waiter {
	w := p.whead
	if w == nil {
		return nil
	}
	p.whead = w.next
	if p.whead == nil {
		p.wtail = nil
	}
	w.next = nil
	p.nwait--
	w.err = err
	w.done = true
	return w
}

// spinRounds bounds how many times a blocked submitter yields before it parks.
const spinRounds = 4

// spin yields the processor a few times, or until w is admitted or refused, before its
// submitter parks. Workers usually make room within a tiny task's time (on another processor,
// or on this one while it yields), and parking the submitter and waking it again for every
// task of a full queue costs more than the task. Bounded: spinRounds yields at most.
func (w *waiter) spin() {
	for range spinRounds {
		runtime.Gosched()
		if len(w.ready) > 0 {
			return
		}
	}
}

func (w *waiter) signal() {
	if w != nil {
		w.ready <- struct{}{}
	}
}

// admitLocked moves the oldest blocked submitter's task into the queue if there is room.
// The returned waiter must be signalled once Pool.mu is released.
func (p *Pool) admitLocked(now int64) *waiter {
	if p.n >= p.capacity || !p.refuseExpiredLocked() {
		return nil
	}
	w := p.popWaiterLocked(nil)
	w.t.enq = now
	p.push(&w.t)
	p.queued++
	return w
}

// refuseExpiredLocked refuses the blocked submitters at the head of the line whose context has
// ended (they get its cause, as if they had noticed it themselves), and reports whether a
// submitter is left to admit. Their ready channels have room, so they are signalled here.
func (p *Pool) refuseExpiredLocked() bool {
	for p.whead != nil {
		ctx := p.whead.t.ctx
		if !expired(ctx) {
			return true
		}
		p.st.rejected++
		p.popWaiterLocked(context.Cause(ctx)).signal()
	}
	return false
}

// expired reports whether ctx has ended.
func expired(ctx context.Context) bool {
	return !isBackground(ctx) && ctx.Done() != nil && ctx.Err() != nil
}

// takeLocked marks a task leaving the queue. It reports false for a group task that its
// group's Wait has already claimed (the entry is then only a tombstone).
func takeLocked(t *task) bool {
	if gt, ok := t.res.(*gtask); ok {
		if gt.state != gQueued {
			return false
		}
		gt.state = gTaken
	}
	return true
}

// report tells the drop hook and t's resolver that t will not run.
func (p *Pool) report(t task, r Reason, cause error) {
	if t.res != nil { // deferred: resolved even if the hook calls runtime.Goexit
		defer t.res.resolve(&dropError{reason: r, cause: cause})
	}
	if p.opts.onDrop != nil {
		p.opts.onDrop(t.ctx, r)
	}
}

// compactLocked removes the tombstones (group tasks claimed by Group.Wait) from the queue,
// keeping the order of the other tasks.
func (p *Pool) compactLocked() {
	j := 0
	for i := 0; i < p.n; i++ {
		t := p.ring[(p.head+i)%len(p.ring)]
		if gt, ok := t.res.(*gtask); ok && gt.state != gQueued {
			continue
		}
		p.ring[(p.head+j)%len(p.ring)] = t // j <= i: never overwrites an unread entry
		j++
	}
	for i := j; i < p.n; i++ {
		p.ring[(p.head+i)%len(p.ring)] = task{}
	}
	p.n = j
}

func (p *Pool) push(t *task) {
	if p.n == len(p.ring) {
		c := 2 * len(p.ring)
		c = max(c, 1024) // most pools never grow past the first allocation
		c = min(c, p.capacity)
		r := make([]task, c)
		for i := 0; i < p.n; i++ {
			r[i] = p.ring[(p.head+i)%len(p.ring)]
		}
		p.ring, p.head = r, 0
	}
	i := p.head + p.n
	if i >= len(p.ring) {
		i -= len(p.ring)
	}
	p.ring[i] = *t
	p.n++
}

func (p *Pool) pop() task {
	var t task
	p.popInto(&t)
	return t
}

// popInto removes the oldest entry of the queue into *t.
func (p *Pool) popInto(t *task) {
	*t = p.ring[p.head]
	p.ring[p.head] = task{}
	p.head++
	if p.head == len(p.ring) {
		p.head = 0
	}
	p.n--
}

func (p *Pool) startedLocked(wait int64) {
	p.st.started++
	p.st.running++
	p.st.wait.add(wait)
}

func (p *Pool) finishedLocked(err error, panicked bool, ran int64) {
	p.st.running--
	p.st.run.add(ran)
	switch {
	case panicked:
		p.st.panicked++
	case err != nil:
		p.st.failed++
	default:
		p.st.completed++
	}
}

// maybeDoneLocked closes done once a closed pool has no goroutine left running its tasks.
func (p *Pool) maybeDoneLocked() {
	if p.closed && !p.drained && p.live == 0 && p.inline == 0 {
		p.drained = true
		close(p.done)
	}
}

// finish delivers a finished task's result to its resolver or to the error hook.
func (p *Pool) finish(t *task, err error) {
	if t.res != nil {
		t.res.resolve(err)
	} else if err != nil && p.opts.onError != nil {
		p.opts.onError(t.ctx, err)
	}
}

func (p *Pool) spawn(t task) {
	w := &worker{wake: make(chan struct{}, 1)}
	go p.work(w, t)
}

// work is a worker goroutine's body. t, if not zero, was already counted as started.
func (p *Pool) work(w *worker, t task) {
	s := shift{t: t}
	normal := false
	defer func() {
		if !normal { // runtime.Goexit ends this goroutine: in s.t, or in a hook
			if s.goexit {
				p.goexited(w, &s.t, s.start)
			} else {
				p.replace(w) // a hook's: its task is already accounted for
			}
		}
	}()
	s.start = p.now()
	for p.serve(w, &s) {
	}
	normal = true
}

// shift is the state of a worker goroutine that outlives a recovered task panic.
type shift struct {
	t        task        // the task being run, or the zero task
	start    int64       // when t started (Pool.now)
	fetching bool        // woken to fetch queued work: counted in Pool.waking
	inTask   bool        // t.fn is running: a panic or Goexit now is the task's
	goexit   bool        // t called runtime.Goexit (otherwise a Goexit is a hook's)
	panicked *PanicError // t panicked: serve accounts for it first
}

// serve runs tasks until the worker exits (it returns false), or until a task panics (it
// returns true, with s.panicked set, and work calls it again). The panic is recovered here,
// once for a run of tasks, rather than around each task.
func (p *Pool) serve(w *worker, s *shift) (again bool) {
	defer func() {
		if s.inTask {
			s.inTask = false
			if v := recover(); v != nil {
				s.panicked = &PanicError{Value: v, Stack: debug.Stack()}
				again = true
			} else { // runtime.Goexit, which work's defer sees
				s.goexit = true
			}
		}
	}()
	for {
		var now int64
		if s.t.fn != nil {
			var err error
			panicked := s.panicked != nil
			if panicked {
				err, s.panicked = s.panicked, nil
			} else {
				ctx := p.life
				if !isBackground(s.t.ctx) {
					ctx = w.taskCtx(p, s.t.ctx)
				}
				s.inTask = true
				err = s.t.fn(ctx)
				s.inTask = false
			}
			now = p.now()
			p.mu.Lock()
			p.finishedLocked(err, panicked, now-s.start)
			if s.t.res != nil || err != nil && p.opts.onError != nil {
				// Count first, so that Stats includes a task once its result is delivered.
				p.mu.Unlock()
				p.finish(&s.t, err)
				p.mu.Lock()
			}
		} else {
			now = p.now()
			p.mu.Lock()
		}
		if s.fetching {
			p.waking--
			s.fetching = false
		}
		if p.fetchLocked(now, &s.t) { // unlocks if it found a task
			s.start = now
			continue
		}
		// Nothing to do: park, or exit.
		if p.closed || p.opts.idle == 0 {
			p.exitLocked(w)
			return false
		}
		w.parked = true
		w.parkedAt = now
		if !p.opts.timed {
			w.parkedAt = p.clock()
		}
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		if !p.park(w) {
			return false
		}
		s.t = w.next
		w.next = task{}
		s.fetching = s.t.fn == nil
		s.start = p.now()
	}
}

// fetchLocked takes the next task to run from the queue (or from a blocked submitter, with a
// queue of 0), skipping expired tasks, and counts it as started. It stores the task in *next
// (or the zero task) and reports whether it found one. Pool.mu is held on entry; it is still
// held on return if no task was found, and released otherwise.
func (p *Pool) fetchLocked(now int64, next *task) bool {
	for p.n > 0 {
		p.popInto(next)
		adm := p.admitLocked(now)
		if !takeLocked(next) {
			if adm != nil {
				p.mu.Unlock()
				adm.signal()
				p.mu.Lock()
			}
			continue
		}
		p.queued--
		if expired(next.ctx) {
			p.st.skipped++
			p.mu.Unlock()
			adm.signal()
			p.report(*next, Expired, context.Cause(next.ctx))
			p.mu.Lock()
			continue
		}
		p.startedLocked(now - next.enq)
		var wk *worker
		if p.n > 0 {
			wk = p.wakeOneLocked() // more work than this worker can take
		}
		p.mu.Unlock()
		adm.signal()
		if wk != nil {
			wk.wake <- struct{}{}
		}
		return true
	}
	if p.refuseExpiredLocked() { // hand-off queue (capacity 0): take a blocked submitter's task
		wt := p.popWaiterLocked(nil)
		*next = wt.t // wt is recycled once signalled
		p.startedLocked(0)
		p.mu.Unlock()
		wt.signal()
		return true
	}
	*next = task{}
	return false
}

// park waits for a wake-up. It reports false if the worker exited (idle timeout or Close).
func (p *Pool) park(w *worker) bool {
	if !w.armed {
		if w.timer == nil {
			w.timer = time.NewTimer(p.opts.idle)
		} else {
			w.timer.Reset(p.opts.idle)
		}
		w.armed = true
	}
	for {
		select {
		case <-w.wake:
			return true
		case <-w.timer.C:
			w.armed = false
			p.mu.Lock()
			if !w.parked { // a wake-up is on its way
				p.mu.Unlock()
				continue
			}
			idle := time.Duration(p.clock() - w.parkedAt)
			if idle >= p.opts.idle {
				for i, c := range p.idle {
					if c == w {
						p.idle = append(p.idle[:i], p.idle[i+1:]...)
						p.idle[len(p.idle):cap(p.idle)][0] = nil
						break
					}
				}
				w.parked = false
				p.exitLocked(w)
				return false
			}
			p.mu.Unlock()
			w.timer.Reset(p.opts.idle - idle)
			w.armed = true
		}
	}
}

// exitLocked ends a worker: Pool.mu is held on entry and released.
func (p *Pool) exitLocked(w *worker) {
	// Release first, so that Close cannot return while a cached context is still linked to
	// the pool's lifetime (its AfterFunc would start a goroutine when Close ends it).
	// Releasing runs no user code.
	w.release()
	p.live--
	p.maybeDoneLocked()
	p.mu.Unlock()
}

// goexited accounts for a task that called runtime.Goexit on worker w, and starts a
// replacement worker if there is queued work.
func (p *Pool) goexited(w *worker, t *task, start int64) {
	now := p.now()
	p.mu.Lock()
	p.finishedLocked(errGoexit, false, now-start)
	p.mu.Unlock()
	p.finish(t, errGoexit)
	p.replace(w)
}

// replace ends worker w, whose goroutine is ending in runtime.Goexit, and starts a
// replacement worker if there is queued work.
func (p *Pool) replace(w *worker) {
	p.mu.Lock()
	if p.n > 0 || p.whead != nil {
		p.mu.Unlock()
		w.release()
		p.spawn(task{}) // takes over w's place in live
		return
	}
	p.exitLocked(w)
}

// release frees what the worker holds: its cached task contexts and its timer.
func (w *worker) release() {
	w.releaseCtx(nil)
	if w.timer != nil {
		w.timer.Stop()
	}
}

// releaseCtx cancels the worker's cached task contexts, except those that the incoming task's
// context descends from (keep), which it keeps in w.held: cancelling them would end it.
// keep == nil keeps none.
func (w *worker) releaseCtx(keep *ancestry) {
	if w.cur.ctx == nil {
		return
	}
	w.held = append(w.held, w.cur)
	w.key, w.cur = nil, derived{}
	for n := len(w.held); n > 0; n-- {
		d := w.held[n-1]
		if keep != nil && keep.of(d.ctx) {
			break // d and those below it (its ancestors) are parent's ancestors
		}
		d.release()
		w.held[n-1] = derived{}
		w.held = w.held[:n-1]
	}
}

// isBackground reports whether ctx is context.Background() or context.TODO(): a context that
// never ends and has no values. Their types say so (every value of each is the same), so no
// value compare (runtime.ifaceeq) is needed.
func isBackground(ctx context.Context) bool {
	t := reflect.TypeOf(ctx)
	return t == backgroundType || t == todoType
}

// The types of context.Background() and context.TODO().
var (
	backgroundType = reflect.TypeOf(context.Background())
	todoType       = reflect.TypeOf(context.TODO())
)

// taskCtx returns the context a task submitted with parent runs with: parent's values and
// cancellation, plus the pool's lifetime. The last derived context is cached per worker.
// The caller runs tasks of a background parent (isBackground) with p.life itself.
func (w *worker) taskCtx(p *Pool, parent context.Context) context.Context {
	if w.key != nil && w.key == parent { // key is a pointer, so == cannot panic
		return w.cur.ctx
	}
	w.releaseCtx(&ancestry{parent})
	if parent.Value(poolQuery{p}) != nil {
		// parent descends from a context this pool derived: it already ends with the pool's
		// lifetime, and a worker that cached it keeps it (releaseCtx) while tasks of its
		// descendants come.
		return parent
	}
	w.cur = p.derive(parent)
	// Only a pointer is cached: a value of a comparable type (a struct) may hold an
	// uncomparable value in an interface field, and comparing two such values panics.
	if reflect.TypeOf(parent).Kind() == reflect.Pointer {
		w.key = parent
	}
	return w.cur.ctx
}

// derived is a task context derived by the pool, with what releases it.
type derived struct {
	ctx    *taskContext
	cancel context.CancelCauseFunc
	stop   func() bool // stops the link to the pool's lifetime
}

// derive returns a context with parent's values that ends when parent ends or the pool's
// lifetime ends (with the pool's cause).
func (p *Pool) derive(parent context.Context) derived {
	ctx, cancel := context.WithCancelCause(parent)
	life := p.life
	stop := context.AfterFunc(life, func() { cancel(context.Cause(life)) })
	return derived{ctx: &taskContext{ctx, p}, cancel: cancel, stop: stop}
}

// release cancels d's context, with context.Canceled as the cause.
func (d derived) release() {
	d.stop()
	d.cancel(context.Canceled)
}

// A taskContext is a context derived by the pool for tasks. It answers an ancestorQuery for
// itself, so that a worker can tell whether an incoming task's context descends from one it
// cached (a task's follow-up, submitted with the task's own context) before cancelling it.
type taskContext struct {
	context.Context
	p *Pool
}

// poolQuery is a Value key answered by the task contexts of one pool.
type poolQuery struct{ p *Pool }

// ancestry asks whether a context descends from a taskContext.
type ancestry struct{ ctx context.Context }

// of reports whether a.ctx is c or descends from it.
func (a *ancestry) of(c *taskContext) bool { return a.ctx.Value(ancestorQuery{c}) != nil }

// ancestorQuery is a Value key: ctx.Value(ancestorQuery{c}) is non-nil if ctx is c or
// descends from it (through contexts that pass unknown keys to their parent).
type ancestorQuery struct{ c *taskContext }

func (c *taskContext) Value(key any) any {
	switch q := key.(type) {
	case ancestorQuery:
		if q.c == c {
			return c
		}
	case poolQuery:
		if q.p == c.p {
			return c
		}
	}
	return c.Context.Value(key)
}

func (c *taskContext) String() string { return fmt.Sprint(c.Context) }

// runInline runs t in the calling goroutine. t was already counted as started and in
// Pool.inline.
func (p *Pool) runInline(t task) {
	var res error
	start := p.now()
	ctx := p.life
	var d derived
	if !isBackground(t.ctx) {
		d = p.derive(t.ctx)
		ctx = d.ctx
	}
	// Deferred first, so that it runs even if the error hook calls runtime.Goexit.
	defer func() {
		p.mu.Lock()
		p.inline--
		p.maybeDoneLocked()
		p.mu.Unlock()
	}()
	var c panics.Catcher
	defer func() {
		if d.ctx != nil {
			d.release()
		}
		var err error
		panicked := false
		switch {
		case c.Panic != nil:
			err, panicked = &PanicError{Value: c.Panic.Value, Stack: c.Panic.Stack}, true
		case c.Goexit:
			err = errGoexit
		default:
			err = res
		}
		now := p.now()
		p.mu.Lock()
		p.finishedLocked(err, panicked, now-start)
		p.mu.Unlock()
		p.finish(&t, err)
	}()
	defer c.Recover()
	res = t.fn(ctx)
	c.Returned()
}

// Close stops intake and waits for the pool to drain: later submits return ErrClosed, blocked
// submitters get ErrClosed, queued tasks still run, and Close returns nil once every task has
// returned and every worker goroutine has exited.
//
// If ctx ends first, Close gives up on the queue: the tasks still queued are abandoned (each is
// reported to the drop hook with reason Shutdown and its Handle or Group sees an error matching
// both ErrDropped and ErrClosed), the contexts of running tasks are cancelled with a cause
// matching ErrClosed, and Close waits for the running tasks to return. It then returns an error
// that says how many tasks were abandoned and cancelled and wraps context.Cause(ctx).
//
// Close is idempotent and safe to call concurrently with submits and with other Close calls;
// each call waits as described. Close must not be called from a task of the same pool (it
// would wait for itself).
func (p *Pool) Close(ctx context.Context) error {
	var waiters []*waiter
	var idle []*worker
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.done = make(chan struct{})
		for p.whead != nil {
			waiters = append(waiters, p.popWaiterLocked(ErrClosed))
			p.st.rejected++
		}
		// Wake every parked worker to fetch: they run the queue dry together, and each
		// exits once it finds the queue empty.
		idle = p.idle
		p.idle = nil
		for _, w := range idle {
			w.parked = false
		}
		p.waking += len(idle)
		p.maybeDoneLocked()
	}
	done := p.done
	p.mu.Unlock()
	for _, w := range waiters {
		w.signal()
	}
	for _, w := range idle {
		w.wake <- struct{}{}
	}

	select {
	case <-done:
		p.kill(ErrClosed)
		return nil
	case <-ctx.Done():
	}
	cause := context.Cause(ctx)
	var abandoned []task
	p.mu.Lock()
	for p.n > 0 {
		t := p.pop()
		if takeLocked(&t) {
			abandoned = append(abandoned, t)
		}
	}
	p.ring, p.head = nil, 0
	p.queued = 0
	p.st.shutdown += uint64(len(abandoned))
	running := p.st.running
	p.mu.Unlock()
	p.kill(&shutdownError{cause: cause})
	for _, t := range abandoned {
		p.report(t, Shutdown, ErrClosed)
	}
	<-done
	if len(abandoned) == 0 && running == 0 {
		return nil
	}
	return &closeError{abandoned: len(abandoned), cancelled: running, cause: cause}
}
