package pool

import (
	"context"
)

// Close stops intake and waits for the pool to drain: later submits return ErrClosed, blocked
// submitters get ErrClosed, queued tasks still run, and Close returns nil once every task has
// returned and every worker goroutine has exited.
//
// If ctx ends first, Close gives up on the queue: the tasks still queued are abandoned (each is
// reported to Hooks.OnDrop with reason ReasonShutdown and its Handle or Group sees an error
// matching both ErrDropped and ErrClosed), the contexts of running tasks are cancelled with a
// cause matching ErrClosed, and Close waits for the running tasks to return. It then returns an
// error that says how many tasks were abandoned and cancelled and wraps context.Cause(ctx).
//
// The return of every task that ran, and the delivery of its result (its Handle resolving, its
// Group recording it, Hooks.OnError returning), synchronize before a Close that waited for
// them returns.
//
// Close is idempotent and safe to call concurrently with submits and with other Close calls;
// each call waits as described. Close must not be called from a task of the same pool (it
// would wait for itself).
func (p *Pool) Close(ctx context.Context) error {
	if p.size == 0 {
		panic(errZeroPool)
	}
	var waiters []*waiter
	var idle []*worker
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.done = make(chan struct{})
		for p.blocked.head != nil {
			waiters = append(waiters, p.blocked.pop(ErrClosed))
			p.st.rejected++
		}
		// Wake every parked worker to fetch: they run the queue dry together, and each
		// exits once it finds the queue empty.
		idle = p.idle.WakeAll()
		for _, w := range idle {
			w.parked = false
		}
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
	for p.queue.Len() > 0 {
		t := p.queue.Pop()
		if takeLocked(&t) {
			abandoned = append(abandoned, t)
		}
	}
	p.queue.Reset()
	p.queued = 0
	p.st.shutdown += uint64(len(abandoned))
	running := p.st.running
	p.mu.Unlock()
	p.kill(&shutdownError{cause: cause})
	for _, t := range abandoned {
		p.report(t, ReasonShutdown, ErrClosed)
	}
	<-done
	if len(abandoned) == 0 && running == 0 {
		return nil
	}
	return &closeError{abandoned: len(abandoned), cancelled: running, cause: cause}
}
