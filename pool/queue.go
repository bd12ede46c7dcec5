package pool

// The queue is Pool.queue, an internal/ring Ring of at most Pool.capacity entries: the
// queued tasks, oldest first, and the tombstones of group tasks that Group.Wait claimed
// (Pool.queued counts the former). Its first allocation is min(1024, capacity) entries:
// most pools never grow past it.

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

// compactLocked removes the tombstones (group tasks claimed by Group.Wait) from the queue,
// keeping the order of the other tasks.
func (p *Pool) compactLocked() { p.queue.Compact(unclaimed) }

// unclaimed reports whether a queued entry is a task still to run, not a tombstone.
func unclaimed(t *task) bool {
	gt, ok := t.res.(*gtask)
	return !ok || gt.state == gQueued
}
