package pool

import (
	"context"
	"runtime"
)

// waiter is a submitter blocked under Block.
type waiter struct {
	t     task
	ready chan struct{} // receives once, after done is set
	next  *waiter       // guarded by Pool.mu
	done  bool          // guarded by Pool.mu: admitted or refused
	err   error         // written before done is set; read after ready
}

// waitLine is the line of submitters blocked under Block, oldest first, with a free list of
// recycled waiters so that blocking does not allocate. It is guarded by Pool.mu. Unlike the
// idle workers (internal/wake), every waiter in it is admitted in turn, first come first
// served, and a waiter whose context ends leaves from the middle: a linked list, whose join
// and pop are O(1) and whose waiters carry their own links, so that a recycled waiter costs
// no allocation.
type waitLine struct {
	head, tail *waiter
	n          int     // waiters in line (Stats.Waiting)
	free       *waiter // recycled waiters, linked by next
}

// join puts a waiter for t at the end of the line and returns it.
func (l *waitLine) join(t task) *waiter {
	w := l.free
	if w != nil {
		l.free = w.next
		w.next, w.done, w.err = nil, false, nil
	} else {
		w = &waiter{ready: make(chan struct{}, 1)}
	}
	w.t = t
	if l.tail == nil {
		l.head = w
	} else {
		l.tail.next = w
	}
	l.tail = w
	l.n++
	return w
}

// leave takes w, which is in line, out of it.
func (l *waitLine) leave(w *waiter) {
	var prev *waiter
	for c := l.head; c != nil; prev, c = c, c.next {
		if c != w {
			continue
		}
		if prev == nil {
			l.head = c.next
		} else {
			prev.next = c.next
		}
		if l.tail == c {
			l.tail = prev
		}
		c.next = nil
		l.n--
		return
	}
}

// pop removes the oldest waiter, marking it done with err, or returns nil if the line is empty.
func (l *waitLine) pop(err error) *waiter {
	w := l.head
	if w == nil {
		return nil
	}
	l.head = w.next
	if l.head == nil {
		l.tail = nil
	}
	w.next = nil
	l.n--
	w.err = err
	w.done = true
	return w
}

// recycle keeps w, which is out of the line and whose ready channel is empty again, for a
// later join.
func (l *waitLine) recycle(w *waiter) {
	w.t = task{}
	w.next = l.free
	l.free = w
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

// await waits until the blocked submitter w is admitted or refused, or ctx (its task's) ends,
// and recycles w. Pool.mu is not held on entry, nor on return.
func (p *Pool) await(w *waiter, ctx context.Context) error {
	w.spin()
	var err error
	select {
	case <-w.ready:
		err = w.err
		p.mu.Lock()
	case <-ctx.Done():
		p.mu.Lock()
		if w.done { // admitted (or refused by Close) just before ctx ended
			p.mu.Unlock()
			<-w.ready
			err = w.err
			p.mu.Lock()
		} else {
			p.blocked.leave(w)
			p.st.rejected++
			err = context.Cause(ctx)
		}
	}
	p.blocked.recycle(w)
	p.mu.Unlock()
	return err
}

// admitLocked moves the oldest blocked submitter's task into the queue if there is room.
// The returned waiter must be signalled once Pool.mu is released. The task keeps the time it
// was submitted: its wait (Stats.Wait) includes the time its submitter was blocked.
func (p *Pool) admitLocked() *waiter {
	if p.queue.Len() >= p.capacity || !p.refuseExpiredLocked() {
		return nil
	}
	w := p.blocked.pop(nil)
	p.queue.PushFrom(&w.t)
	p.queued++
	return w
}

// refuseExpiredLocked refuses the blocked submitters at the head of the line whose context has
// ended (they get its cause, as if they had noticed it themselves), and reports whether a
// submitter is left to admit. Their ready channels have room, so they are signalled here.
func (p *Pool) refuseExpiredLocked() bool {
	for p.blocked.head != nil {
		ctx := p.blocked.head.t.ctx
		if !expired(ctx) {
			return true
		}
		p.st.rejected++
		p.blocked.pop(context.Cause(ctx)).signal()
	}
	return false
}
