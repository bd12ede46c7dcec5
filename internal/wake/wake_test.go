package wake_test

import (
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/wake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWakesOneAtATime(t *testing.T) {
	var l wake.List[int]
	if _, ok := l.WakeNewest(); ok {
		t.Fatal("WakeNewest woke a waiter of an empty list")
	}
	for i := range 3 {
		l.Park(i)
	}
	w, ok := l.WakeNewest()
	if !ok || w != 2 {
		t.Fatalf("WakeNewest = %d, %t; want 2, true", w, ok)
	}
	if l.Wakeable() {
		t.Fatal("Wakeable with a waiter on its way")
	}
	if _, ok := l.WakeNewest(); ok {
		t.Fatal("WakeNewest woke a second waiter while one is on its way")
	}
	if _, ok := l.WakeOldest(); ok {
		t.Fatal("WakeOldest woke a second waiter while one is on its way")
	}
	l.Arrived()
	if got := l.Waking(); got != 0 {
		t.Fatalf("Waking after Arrived = %d; want 0", got)
	}
	w, ok = l.WakeOldest()
	if !ok || w != 0 {
		t.Fatalf("WakeOldest = %d, %t; want 0, true", w, ok)
	}
	if got := l.Len(); got != 1 {
		t.Fatalf("Len = %d; want 1", got)
	}
}

func TestExpectCountsAWaiterThatWasNotParked(t *testing.T) {
	var l wake.List[int]
	l.Park(7)
	l.Expect()
	if _, ok := l.WakeNewest(); ok {
		t.Fatal("WakeNewest woke a waiter while an expected one is on its way")
	}
	l.Arrived()
	if w, ok := l.WakeNewest(); !ok || w != 7 {
		t.Fatalf("WakeNewest = %d, %t; want 7, true", w, ok)
	}
}

func TestTakeNewestIsAHandOff(t *testing.T) {
	var l wake.List[int]
	if _, ok := l.TakeNewest(); ok {
		t.Fatal("TakeNewest took from an empty list")
	}
	l.Park(1)
	l.Park(2)
	l.Expect() // one on its way does not stop a hand-off
	w, ok := l.TakeNewest()
	if !ok || w != 2 {
		t.Fatalf("TakeNewest = %d, %t; want 2, true", w, ok)
	}
	if got := l.Waking(); got != 1 {
		t.Fatalf("Waking after TakeNewest = %d; want 1 (a hand-off is not on its way)", got)
	}
}

func TestRemove(t *testing.T) {
	var l wake.List[int]
	for i := range 4 {
		l.Park(i)
	}
	if !l.Remove(1) {
		t.Fatal("Remove(1) = false; want true")
	}
	if l.Remove(1) {
		t.Fatal("Remove(1) again = true; want false")
	}
	if got, want := l.WakeAll(), []int{0, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("left %v; want %v", got, want)
	}
}

func TestWakeAllCountsEach(t *testing.T) {
	var l wake.List[int]
	for i := range 3 {
		l.Park(i)
	}
	if got, want := l.WakeAll(), []int{0, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("WakeAll = %v; want %v", got, want)
	}
	if got := l.Waking(); got != 3 {
		t.Fatalf("Waking = %d; want 3", got)
	}
	if l.Len() != 0 {
		t.Fatalf("Len after WakeAll = %d; want 0", l.Len())
	}
	l.Park(9) // the list starts a new slice: the returned one is the caller's
	if got := l.WakeAll(); !slices.Equal(got, []int{9}) {
		t.Fatalf("WakeAll = %v; want [9]", got)
	}
}
