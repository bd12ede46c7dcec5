package wake

import "testing"

// A waiter let go must not stay reachable from the list's array: pool's idle workers hold
// timers and contexts.
func TestLetGoWaitersAreNotKept(t *testing.T) {
	var l List[*int]
	ws := []*int{new(int), new(int), new(int), new(int)}
	for _, w := range ws {
		l.Park(w)
	}
	l.Remove(ws[1])
	l.TakeNewest()
	l.WakeNewest()
	l.Arrived()
	l.WakeOldest()
	full := l.ws[:cap(l.ws)]
	for i, w := range full {
		if w != nil {
			t.Fatalf("slot %d still holds %p after every waiter was let go", i, w)
		}
	}
}
