// Package wake keeps the parked waiters of a wake-one scheme: a list of parked waiters and a
// count of those woken (or started) that have not yet arrived to look at the shared state.
// While one is on its way, waking another is pointless: it will look anyway, and if it finds
// more work than it takes it wakes the next one. So a burst of work costs a few wake-ups, not
// one per item.
//
// A List holds the waiters (of any comparable type W, usually a pointer) and the count; it
// does not signal them. Its owner guards it with its own mutex, and sends the wake-up on the
// waiter's channel itself, under that mutex or after releasing it. It offers:
//   - Park(w): w joins the list, as its newest waiter.
//   - WakeNewest / WakeOldest: if a waiter is parked and none is on its way (Wakeable),
//     remove the newest (or the oldest) and count it on its way. The newest is the warmest
//     (pool's and scope's workers: the others may time out); the oldest is the fairest
//     (queue's Memory: receivers and blocked producers).
//   - Expect: count one on its way that was not parked (a worker just started).
//   - Arrived: one on its way has taken the lock again and looks at the state.
//   - TakeNewest: remove the newest waiter without counting it on its way, for a hand-off:
//     the owner gives it work directly (pool's w.next), so it need not look.
//   - Remove(w): w leaves the list by itself (an idle timeout, a ctx); false if it was
//     already woken, in which case it is still counted on its way until Arrived.
//   - WakeAll: remove every waiter, counting each on its way (Close).
//
// A List is not safe for concurrent use, and must not be copied after first use. The zero
// List is empty and ready to use.
package wake

// List is a list of parked waiters with a count of those on their way; see the package doc.
type List[W comparable] struct {
	ws     []W // parked, oldest first
	waking int // woken or expected, not yet Arrived
}

// Len returns the number of parked waiters.
func (l *List[W]) Len() int { return len(l.ws) }

// Waking returns the number of waiters on their way: woken or expected, not yet arrived.
func (l *List[W]) Waking() int { return l.waking }

// Wakeable reports whether a wake-up would wake someone: a waiter is parked and none is on its
// way.
func (l *List[W]) Wakeable() bool { return len(l.ws) > 0 && l.waking == 0 }

// Park adds w as the newest waiter.
func (l *List[W]) Park(w W) { l.ws = append(l.ws, w) }

// WakeNewest removes the newest waiter and counts it on its way, if Wakeable; otherwise it
// returns false.
func (l *List[W]) WakeNewest() (W, bool) {
	if !l.Wakeable() {
		var zero W
		return zero, false
	}
	l.waking++
	return l.takeNewest(), true
}

// WakeOldest removes the oldest waiter and counts it on its way, if Wakeable; otherwise it
// returns false.
func (l *List[W]) WakeOldest() (W, bool) {
	if !l.Wakeable() {
		var zero W
		return zero, false
	}
	l.waking++
	w := l.ws[0]
	l.removeAt(0)
	return w, true
}

// TakeNewest removes the newest waiter without counting it on its way; false if none is parked.
func (l *List[W]) TakeNewest() (W, bool) {
	if len(l.ws) == 0 {
		var zero W
		return zero, false
	}
	return l.takeNewest(), true
}

func (l *List[W]) takeNewest() W {
	var zero W
	n := len(l.ws)
	w := l.ws[n-1]
	l.ws[n-1] = zero // the list keeps no reference to a waiter it let go
	l.ws = l.ws[:n-1]
	return w
}

// Expect counts one waiter on its way that was not parked.
func (l *List[W]) Expect() { l.waking++ }

// Arrived records that a waiter on its way has arrived.
func (l *List[W]) Arrived() { l.waking-- }

// Remove takes w out of the list and reports whether it was parked there.
func (l *List[W]) Remove(w W) bool {
	for i, c := range l.ws {
		if c == w {
			l.removeAt(i)
			return true
		}
	}
	return false
}

// removeAt removes ws[i], keeping the order of the others.
func (l *List[W]) removeAt(i int) {
	var zero W
	n := copy(l.ws[i:], l.ws[i+1:])
	l.ws[i+n] = zero // the vacated last slot: the list keeps no reference to w
	l.ws = l.ws[:i+n]
}

// WakeAll removes every parked waiter, counts each on its way, and returns them, oldest first.
// The returned slice is the caller's: the list starts a new one.
func (l *List[W]) WakeAll() []W {
	ws := l.ws
	l.ws = nil
	l.waking += len(ws)
	return ws
}
