package pool

import (
	"context"
	"errors"
	"sync"

	"github.com/corral-go/corral/internal/echo"
)

// A Group is a structured view of a shared Pool: it owns the tasks started with its Go method,
// and its Wait returns once they have all finished. It fails fast: the first task failure (an
// error, a panic as *PanicError, or a task the pool dropped) cancels the group's context, with
// that failure as the cause, so that the group's other tasks stop early; tasks of the pool
// outside the group are not affected. Tasks of a cancelled group that have not started are
// skipped.
//
// Wait never deadlocks on its own pool, even when called from a task of that pool with a
// single worker: while it waits, Wait runs the group's queued tasks itself, including those
// queued after it started waiting. For the same reason Go never blocks on a full pool: when
// the pool has no room (whatever its Overflow), Go runs the task itself before returning. A task
// that Wait or Go runs this way runs on a goroutine of its own that the caller waits for, so a
// runtime.Goexit in it fails that task (like a worker's task) and does not end the caller.
//
// A Group is safe for concurrent use: tasks of the group may call Go. Go must not be called
// after Wait has returned. A Group is made by Pool.Group: the methods of a zero Group panic
// with "pool: zero Group: use Pool.Group", in the calling goroutine.
type Group struct {
	p      *Pool
	ctx    context.Context
	cancel context.CancelCauseFunc
	kick   chan struct{} // capacity 1: wakes a parked Wait (task queued, or none left)

	// Guarded by Pool.mu.
	pending []*gtask // queued tasks, in order, for Wait to claim (stale entries skipped)
	active  int      // accepted tasks that have not resolved
	parked  int      // Wait calls parked on kick
	waited  bool     // Wait has returned

	mu       sync.Mutex // guards the fields below
	failures []error    // in the order they happened: the first is the root cause
	echoes   int        // tasks that ended only because the group's context did
}

// gtask is one task of a group.
type gtask struct {
	g     *Group
	fn    func(context.Context) error
	enq   int64
	state uint8 // guarded by Pool.mu
}

const (
	gQueued  uint8 = iota // in the pool's queue
	gTaken                // left the queue: given to a worker, evicted or abandoned
	gClaimed              // taken by Wait to run inline; its queue entry is a tombstone
)

func (gt *gtask) resolve(err error) {
	g := gt.g
	g.record(err)
	g.p.mu.Lock()
	g.active--
	if g.active == 0 {
		g.wakeLocked()
	}
	g.p.mu.Unlock()
}

// wakeLocked wakes a parked Wait, if any.
func (g *Group) wakeLocked() {
	if g.parked > 0 {
		select {
		case g.kick <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// Group returns a new Group whose tasks run on p with a context derived from ctx. Cancelling
// ctx cancels the group's tasks. It panics if ctx is nil.
func (p *Pool) Group(ctx context.Context) *Group {
	if p.size == 0 {
		panic(errZeroPool)
	}
	if ctx == nil {
		panic("pool: nil context")
	}
	gctx, cancel := context.WithCancelCause(ctx)
	return &Group{p: p, ctx: gctx, cancel: cancel, kick: make(chan struct{}, 1)}
}

// Go starts fn as a task of the group. fn's context carries the values of the group's
// context and ends when the group is cancelled (first failure, or its parent context ending)
// or when the pool is shut down.
//
// If the group is already cancelled, fn is skipped: counted in Stats.Skipped and reported to
// Hooks.OnDrop with reason ReasonExpired and the group's context. If the pool is
// closed, fn fails with ErrClosed. If the pool is full, fn runs in the calling goroutine.
func (g *Group) Go(fn func(ctx context.Context) error) {
	if fn == nil {
		panic("pool: Group.Go of a nil func")
	}
	p := g.p
	if p == nil {
		panic(errZeroGroup)
	}
	gt := &gtask{g: g, fn: fn}
	t := task{ctx: g.ctx, fn: fn, res: gt, enq: p.stamp()}
	p.mu.Lock()
	if g.waited {
		p.mu.Unlock()
		panic("pool: Group.Go called after Wait returned")
	}
	g.active++
	p.st.submitted++
	if g.ctx.Err() != nil {
		p.st.skipped++
		p.mu.Unlock()
		p.report(t, ReasonExpired, context.Cause(g.ctx))
		return
	}
	if p.closed {
		p.st.rejected++
		p.mu.Unlock()
		gt.resolve(ErrClosed)
		return
	}
	if p.sampler.Take() {
		p.stampLocked(&t)
	}
	how, w := p.placeLocked(&t)
	switch how {
	case placedQueue:
		gt.state = gQueued
		gt.enq = t.enq
		for len(g.pending) > 0 && g.pending[0].state != gQueued {
			g.pending[0] = nil // taken by a worker: forget it, so pending stays short
			g.pending = g.pending[1:]
		}
		g.pending = append(g.pending, gt)
		g.wakeLocked() // a parked Wait may run it
	case placedNowhere:
		gt.state = gTaken
		p.st.inline++
		p.startedLocked()
		p.inline++
		p.mu.Unlock()
		p.runContained(t)
		return
	default:
		gt.state = gTaken
	}
	p.mu.Unlock()
	p.afterPlace(how, w, t)
}

// Wait runs the group's queued tasks (those queued before and while it waits) itself, waits for
// the others to finish, and returns nil if every task succeeded. Otherwise it returns the
// failures: the first failure (the root cause, which cancelled the group) first, followed by
// every later failure that was not merely an echo of that cancellation (a task returning the
// context's error); errors.Is and errors.As see each of them. If the group's parent context
// ended and some task was skipped or stopped because of it, but no task failed, Wait returns
// context.Cause of the group's context.
//
// When Wait returns, the group's context is cancelled. The return of every task of the group
// (and the report of every skipped one) synchronizes before Wait returns.
func (g *Group) Wait() error {
	p := g.p
	if p == nil {
		panic(errZeroGroup)
	}
	p.mu.Lock()
	for {
		var gt *gtask
		for len(g.pending) > 0 {
			c := g.pending[0]
			g.pending[0] = nil
			g.pending = g.pending[1:]
			if c.state == gQueued {
				gt = c
				break
			}
		}
		if gt == nil {
			g.pending = nil
			if g.active == 0 {
				break
			}
			// Park until a task of the group is queued (this goroutine may run it) or the
			// last one resolves.
			g.parked++
			p.mu.Unlock()
			<-g.kick
			p.mu.Lock()
			g.parked--
			continue
		}
		gt.state = gClaimed
		p.queued--
		var admitted []*waiter
		if p.blocked.head != nil { // the claim made room for blocked submitters
			p.compactLocked()
			for w := p.admitLocked(); w != nil; w = p.admitLocked() {
				admitted = append(admitted, w)
			}
		}
		if g.ctx.Err() != nil {
			p.st.skipped++
			p.mu.Unlock()
			signalAll(admitted)
			p.report(task{ctx: g.ctx, res: gt}, ReasonExpired, context.Cause(g.ctx))
			p.mu.Lock()
			continue
		}
		p.st.inline++
		p.startedLocked()
		p.inline++
		p.mu.Unlock()
		signalAll(admitted)
		p.runContained(task{ctx: g.ctx, fn: gt.fn, res: gt, enq: gt.enq})
		p.mu.Lock()
	}
	g.waited = true
	g.wakeLocked() // another Wait call may be parked too
	p.mu.Unlock()
	err := g.result()
	g.cancel(errGroupDone)
	return err
}

var errGroupDone = errors.New("pool: group wait returned")

// errZeroGroup is what the methods of a zero Group panic with.
const errZeroGroup = "pool: zero Group: use Pool.Group"

// record notes a task's final error.
func (g *Group) record(err error) {
	if err == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx.Err() != nil && g.isEcho(err) {
		g.echoes++
		return
	}
	g.failures = append(g.failures, err)
	if len(g.failures) == 1 {
		g.cancel(err)
	}
}

// isEcho reports whether err only says that the group's context ended.
func (g *Group) isEcho(err error) bool {
	return errors.Is(err, ErrExpired) || echo.Of(g.ctx, err)
}

func (g *Group) result() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch len(g.failures) {
	case 0:
		if g.echoes > 0 {
			return context.Cause(g.ctx)
		}
		return nil
	case 1:
		return g.failures[0]
	}
	return errors.Join(g.failures...)
}

func signalAll(ws []*waiter) {
	for _, w := range ws {
		w.signal()
	}
}
