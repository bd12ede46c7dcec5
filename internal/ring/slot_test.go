package ring

import "testing"

// A popped entry must not stay reachable from the buffer: a pool's task holds its context
// and func, which the garbage collector could otherwise not free until the slot is reused.
func TestPopZeroesTheSlot(t *testing.T) {
	r := New[*int](4, 0)
	a, b := new(int), new(int)
	r.Push(a)
	r.Push(b)
	var got *int
	r.PopInto(&got)
	if got != a {
		t.Fatalf("PopInto gave %p; want %p", got, a)
	}
	if got := r.Pop(); got != b {
		t.Fatalf("Pop gave %p; want %p", got, b)
	}
	for i, v := range r.buf {
		if v != nil {
			t.Fatalf("buf[%d] still holds %p after it was popped", i, v)
		}
	}
}

// Compact zeroes the slots it frees, for the same reason.
func TestCompactZeroesFreedSlots(t *testing.T) {
	r := New[*int](4, 0)
	for range 4 {
		r.Push(new(int))
	}
	r.Compact(func(**int) bool { return false })
	for i, v := range r.buf {
		if v != nil {
			t.Fatalf("buf[%d] still holds %p after Compact dropped it", i, v)
		}
	}
}
