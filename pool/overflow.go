package pool

// overflowUnlock applies the pool's Overflow to t, which found the pool full. Pool.mu is held
// on entry and overflowUnlock releases it (hence its name): after counting, every policy but
// Reject runs user code (a hook, the task itself) or waits, which it must not do under the
// lock.
func (p *Pool) overflowUnlock(t task) error {
	switch p.opts.overflow {
	case Reject:
		p.st.rejected++
		p.mu.Unlock()
		return ErrFull
	case DropOldest:
		if p.queue.Len() > 0 {
			old := p.evictLocked(t)
			p.mu.Unlock()
			p.report(old, ReasonEvicted, nil)
			return nil
		}
		fallthrough // a queue of 0: nothing to evict
	case DropNewest:
		p.st.refused++
		p.mu.Unlock()
		if p.opts.hooks.OnDrop != nil {
			p.opts.hooks.OnDrop(t.ctx, DropEvent{Reason: ReasonRefused})
		}
		return ErrDropped
	case CallerRuns:
		p.st.inline++
		p.startedLocked()
		p.inline++
		p.mu.Unlock()
		p.runContained(t)
		return nil
	}
	// Block.
	w := p.blocked.join(t)
	p.mu.Unlock()
	return p.await(w, t.ctx)
}

// evictLocked queues t in place of the oldest queued task, which it returns (DropOldest).
func (p *Pool) evictLocked(t task) task {
	// The queue is full of live tasks: placeLocked compacted away the group tasks claimed
	// by Wait before it found no room.
	old := p.queue.Pop()
	if !takeLocked(&old) {
		panic("pool: internal error: a claimed group task survived compaction")
	}
	p.queued--
	p.st.evicted++
	p.queue.PushFrom(&t)
	p.queued++
	return old
}
