package pool

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/corral-go/corral/internal/panics"
)

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

func (p *Pool) spawn(t task) {
	w := &worker{wake: make(chan struct{}, 1)}
	go p.work(w, shift{t: t})
}

// work is a worker goroutine's body, from where s says the worker is: a new worker (s.t, if
// not zero, was already counted as started) or one taking over from a goroutine that
// runtime.Goexit ended.
func (p *Pool) work(w *worker, s shift) {
	p.labelled()
	if s.t.fn != nil {
		s.start = p.clockFor(&s.t)
	}
	normal := false
	defer func() {
		if !normal { // runtime.Goexit ends this goroutine: in s.t, or in a hook
			p.goexited(w, &s)
		}
	}()
	for p.serve(w, &s) {
	}
	normal = true
}

// shift is the state of a worker goroutine, kept across a recovered task panic and handed on
// to the goroutine that takes over from one that runtime.Goexit ended.
type shift struct {
	t        task        // the task to run next (counted as started), or the zero task
	start    int64       // when t started (Pool.clock), if t is timed
	out      task        // a finished task whose result is still to be delivered, or the zero task
	outErr   error       // out's result
	outRan   int64       // how long out ran (Pool.clock units; 0 unless out was timed)
	parked   bool        // w is in Pool.idle (or was taken from it since): wait for a wake-up
	exit     bool        // the pool is closed and has nothing left to run: exit
	fetching bool        // woken to fetch queued work: counted on its way in Pool.idle
	inTask   bool        // t.fn is running: a panic or Goexit now is the task's
	goexit   bool        // t called runtime.Goexit (otherwise a Goexit is a hook's)
	panicked *PanicError // t panicked: serve accounts for it first
}

// serve runs tasks until the worker exits (it returns false), or until a task panics (it
// returns true, with s.panicked set, and work calls it again). The panic is recovered here,
// once for a run of tasks, rather than around each task.
//
// When a task returns, the worker takes its next task, or joins the idle workers, before it
// delivers the result (to the task's Handle or Group, or to Hooks.OnError): whoever learns
// the result finds the worker free, and a submit then hands it work instead of refusing it.
func (p *Pool) serve(w *worker, s *shift) (again bool) {
	defer func() {
		if s.inTask {
			s.inTask = false
			if v := recover(); v != nil {
				s.panicked = panics.PoolError(v, debug.Stack())
				again = true
			} else { // runtime.Goexit, which work's defer sees
				s.goexit = true
			}
		}
	}()
	for {
		if s.out.fn != nil {
			p.deliver(s)
		}
		if s.exit {
			p.mu.Lock()
			p.exitLocked(w)
			p.mu.Unlock()
			return false
		}
		if s.parked {
			if !p.park(w) {
				return false
			}
			s.parked = false
			s.t = w.next
			w.next = task{}
			s.fetching = s.t.fn == nil
			s.start = p.clockFor(&s.t)
		}
		var err error
		panicked := s.panicked != nil
		if panicked {
			err, s.panicked = s.panicked, nil
		} else if s.t.fn != nil {
			ctx := p.life
			if !isBackground(s.t.ctx) {
				ctx = w.taskCtx(p, s.t.ctx)
			}
			s.inTask = true
			err = s.t.fn(ctx)
			s.inTask = false
		}
		p.advance(w, s, err, panicked)
	}
}

// deliver delivers the result kept in s.out. It clears s.out first: a hook that calls
// runtime.Goexit has had its delivery.
func (p *Pool) deliver(s *shift) {
	out, err, ran := s.out, s.outErr, s.outRan
	s.out, s.outErr, s.outRan = task{}, nil, 0
	p.finish(&out, err, ran)
	if s.t.fn != nil {
		s.start = p.clockFor(&s.t) // the next task starts now, not before the delivery
	}
}

// finish delivers a finished task's result to its resolver or to Hooks.OnError; ran is how
// long the task ran, if it was timed. The event carries it when the pool is timed (which
// OnError makes it): the sampled tasks of another pool, such as one whose only OnError is
// WithLogger's, report none.
func (p *Pool) finish(t *task, err error, ran int64) {
	if t.res != nil {
		t.res.resolve(err)
	} else if err != nil && p.opts.hooks.OnError != nil {
		if !p.opts.timed {
			ran = 0
		}
		p.opts.hooks.OnError(t.ctx, ErrorEvent{Err: err, Duration: time.Duration(ran)})
	}
}

// advance ends the task in s.t, if any, which returned err (or panicked), and decides what the
// worker does next: it takes the next task into s.t, or joins the idle workers (s.parked), or,
// when the pool is closed and has nothing left to run, exits (s.exit, once the worker has
// delivered: Close waits for it). It does so holding Pool.mu, and sends the wake-ups that
// taking a task causes once it has released it.
//
// The task's end is counted first, so that Stats includes a task once its result is
// delivered, and the task is kept in s.out if its result is to be. (It is ended here rather
// than in a function of its own, which would cost every task a call.)
func (p *Pool) advance(w *worker, s *shift, err error, panicked bool) {
	now := p.clockFor(&s.t)
	p.mu.Lock()
	if s.t.fn != nil {
		p.finishedLocked(err, panicked)
		if s.t.enq != 0 {
			p.timesLocked().record(s.t.enq, s.start, now)
		}
		if s.t.res != nil || err != nil && p.opts.hooks.OnError != nil {
			s.out, s.outErr, s.outRan = s.t, err, now-s.start
		}
		// s.t is not cleared here: fetchLocked stores the next task, or the zero task, in it
		// before it could release Pool.mu.
	}
	if s.fetching {
		p.idle.Arrived()
		s.fetching = false
	}
	if found, wk := p.fetchLocked(&s.t); found {
		s.start = 0
		if s.t.enq != 0 {
			s.start = now
			if now == 0 { // the task before was not timed
				s.start = p.clock()
			}
		}
		p.mu.Unlock()
		wk.send()
		return
	}
	if p.closed {
		s.exit = true
	} else {
		w.parked = true
		w.parkedAt = now
		if now == 0 {
			w.parkedAt = p.clock()
		}
		p.idle.Park(w)
		s.parked = true
	}
	p.mu.Unlock()
}

// finishedLocked counts a task that ran and returned err (or panicked). When the pool is timed,
// the caller records the task's timings too (timings.record), outside this function so that
// the untimed path stays inlined.
func (p *Pool) finishedLocked(err error, panicked bool) {
	p.st.running--
	switch {
	case panicked:
		p.st.panicked++
	case err != nil:
		p.st.failed++
	default:
		p.st.completed++
	}
}

// wakeups are what a worker that took a task sends once Pool.mu is released: the blocked
// submitter admitted to the queue in its place, and the parked worker woken to take more.
type wakeups struct {
	admitted *waiter
	worker   *worker
}

func (wk wakeups) send() {
	wk.admitted.signal()
	if wk.worker != nil {
		wk.worker.wake <- struct{}{}
	}
}

// fetchLocked takes the next task to run from the queue (or from a blocked submitter, with a
// queue of 0), skipping expired tasks, and counts it as started. It stores the task in *next
// (or the zero task) and reports whether it found one, with the wake-ups to send once Pool.mu
// is released. To skip a tombstone or an expired task it releases Pool.mu for a moment (to
// signal the submitter admitted in its place, and for Hooks.OnDrop): the state may change
// meanwhile, and it looks again.
func (p *Pool) fetchLocked(next *task) (bool, wakeups) {
	for p.queue.Len() > 0 {
		p.queue.PopInto(next)
		var adm *waiter
		if p.blocked.head != nil { // the check inlined: most fetches find no blocked submitter
			adm = p.admitLocked()
		}
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
			t := *next
			*next = task{} // OnDrop may call runtime.Goexit: next holds no task then
			p.mu.Unlock()
			adm.signal()
			p.report(t, ReasonExpired, context.Cause(t.ctx))
			p.mu.Lock()
			continue
		}
		p.startedLocked()
		wk := wakeups{admitted: adm}
		if p.queue.Len() > 0 {
			wk.worker = p.wakeOneLocked() // more work than this worker can take
		}
		return true, wk
	}
	if p.refuseExpiredLocked() { // hand-off queue (capacity 0): take a blocked submitter's task
		wt := p.blocked.pop(nil)
		*next = wt.t // wt is recycled once signalled
		p.startedLocked()
		return true, wakeups{admitted: wt}
	}
	*next = task{}
	return false, wakeups{}
}

// wakeOneLocked picks a parked worker to come and fetch queued work, unless one is already
// on its way. The caller sends on its wake channel once Pool.mu is released.
//
// The check stays in a body small enough to be inlined where a task is queued and where one
// is fetched: most calls find a worker already on its way, and make no call then.
func (p *Pool) wakeOneLocked() *worker {
	if p.idle.Wakeable() {
		return p.wakeNewestLocked()
	}
	return nil
}

// wakeNewestLocked is wakeOneLocked once a parked worker is known to be wakeable.
func (p *Pool) wakeNewestLocked() *worker {
	w, _ := p.idle.WakeNewest()
	w.parked = false
	return w
}

func (p *Pool) startedLocked() {
	p.st.started++
	p.st.running++
}

// expired reports whether ctx has ended. By the Context contract Err is non-nil exactly when
// Done is closed, so Err alone answers. (A check for context.Background() first was tried and
// was slower than the call it would spare.)
func expired(ctx context.Context) bool {
	return ctx.Err() != nil
}

// report tells Hooks.OnDrop and t's resolver that t will not run.
func (p *Pool) report(t task, r Reason, cause error) {
	if t.res != nil { // deferred: resolved even if the hook calls runtime.Goexit
		defer t.res.resolve(&dropError{reason: r, cause: cause})
	}
	if p.opts.hooks.OnDrop != nil {
		p.opts.hooks.OnDrop(t.ctx, DropEvent{Reason: r})
	}
}

// park waits for a wake-up of w, which is in Pool.idle. It reports false if the worker exited
// (idle timeout or Close).
func (p *Pool) park(w *worker) bool {
	if p.opts.idle == 0 {
		p.mu.Lock()
		if w.parked { // no wake-up is on its way: exit at once
			p.unparkLocked(w)
			p.exitLocked(w)
			p.mu.Unlock()
			return false
		}
		p.mu.Unlock()
		<-w.wake
		return true
	}
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
				p.unparkLocked(w)
				p.exitLocked(w)
				p.mu.Unlock()
				return false
			}
			p.mu.Unlock()
			w.timer.Reset(p.opts.idle - idle)
			w.armed = true
		}
	}
}

// unparkLocked takes w, which is parked, out of Pool.idle.
func (p *Pool) unparkLocked(w *worker) {
	p.idle.Remove(w)
	w.parked = false
}

// exitLocked ends a worker.
func (p *Pool) exitLocked(w *worker) {
	// Release first, so that Close cannot return while a cached context is still linked to
	// the pool's lifetime (its AfterFunc would start a goroutine when Close ends it).
	// Releasing runs no user code.
	w.release()
	p.live--
	p.maybeDoneLocked()
}

// maybeDoneLocked closes done once a closed pool has no goroutine left running its tasks.
func (p *Pool) maybeDoneLocked() {
	if p.closed && !p.drained && p.live == 0 && p.inline == 0 {
		p.drained = true
		close(p.done)
	}
}

// goexited is work's defer when runtime.Goexit ends the worker goroutine, in its task or in a
// hook. A task's Goexit is its failure: the task is counted, the worker moves on as after any
// task (so it is free before the failure is delivered) and delivers it, here, in the goroutine
// that ran the task. Then a new goroutine takes over w where this one stopped, even if a hook
// called Goexit again during this delivery (deferred calls still run); the pool keeps its
// worker.
func (p *Pool) goexited(w *worker, s *shift) {
	defer func() {
		if s.exit && s.out.fn == nil {
			p.mu.Lock()
			p.exitLocked(w)
			p.mu.Unlock()
			return
		}
		go p.work(w, *s)
	}()
	if !s.goexit {
		return // a hook's: its task is already accounted for
	}
	s.goexit = false
	p.advance(w, s, ErrGoexit, false)
	if s.out.fn != nil {
		p.deliver(s)
	}
}

// release frees what the worker holds: its cached task contexts and its timer.
func (w *worker) release() {
	w.releaseCtx(nil)
	if w.timer != nil {
		w.timer.Stop()
	}
}
