package ring_test

import (
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/ring"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// drain pops every entry, oldest first.
func drain[T any](r *ring.Ring[T]) []T {
	var out []T
	for r.Len() > 0 {
		out = append(out, r.Pop())
	}
	return out
}

func TestFIFOAcrossWrapAndGrowth(t *testing.T) {
	var r ring.Ring[int]
	next, want := 0, 0
	// Interleave pushes and pops so that the head wraps around before the ring grows.
	for round := range 50 {
		for range round%7 + 3 {
			r.Push(next)
			next++
		}
		for range round%5 + 1 {
			if r.Len() == 0 {
				break
			}
			if got := *r.Front(); got != want {
				t.Fatalf("Front = %d; want %d", got, want)
			}
			if got := r.Pop(); got != want {
				t.Fatalf("Pop = %d; want %d", got, want)
			}
			want++
		}
		if got := r.Len(); got != next-want {
			t.Fatalf("Len = %d; want %d", got, next-want)
		}
	}
	for _, got := range drain(&r) {
		if got != want {
			t.Fatalf("Pop = %d; want %d", got, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("popped %d entries; pushed %d", want, next)
	}
}

func TestBoundsCapTheAllocation(t *testing.T) {
	r := ring.New[int](4, 6)
	for i := range 6 {
		r.Push(i)
	}
	if got, want := drain(&r), []int{0, 1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("got %v; want %v", got, want)
	}
	// A push past limit still keeps the entry: limit caps allocations, not entries.
	for i := range 7 {
		r.Push(i)
	}
	if got, want := drain(&r), []int{0, 1, 2, 3, 4, 5, 6}; !slices.Equal(got, want) {
		t.Fatalf("past limit: got %v; want %v", got, want)
	}
}

func TestCompactKeepsOrder(t *testing.T) {
	var r ring.Ring[int]
	for range 5 { // move the head so that the entries wrap around
		r.Push(-1)
	}
	for range 5 {
		r.Pop()
	}
	for i := range 8 {
		r.Push(i)
	}
	var seen []int
	r.Compact(func(v *int) bool {
		seen = append(seen, *v)
		return *v%3 != 0
	})
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(seen, want) {
		t.Fatalf("keep saw %v; want %v", seen, want)
	}
	if got, want := r.Len(), 5; got != want {
		t.Fatalf("Len after Compact = %d; want %d", got, want)
	}
	r.Push(8)
	if got, want := drain(&r), []int{1, 2, 4, 5, 7, 8}; !slices.Equal(got, want) {
		t.Fatalf("got %v; want %v", got, want)
	}
}

func TestResetEmpties(t *testing.T) {
	var r ring.Ring[int]
	for i := range 20 {
		r.Push(i)
	}
	if r.Cap() != 32 {
		t.Fatalf("Cap with 20 entries = %d; want 32 (8, doubled twice)", r.Cap())
	}
	r.Reset()
	if r.Len() != 0 || r.Cap() != 0 {
		t.Fatalf("after Reset Len = %d, Cap = %d; want 0, 0 (the buffer released)", r.Len(), r.Cap())
	}
	r.Push(42)
	if got := drain(&r); !slices.Equal(got, []int{42}) {
		t.Fatalf("after Reset got %v; want [42]", got)
	}
}

func BenchmarkPushPop(b *testing.B) {
	var r ring.Ring[[4]int]
	var v [4]int
	b.ReportAllocs()
	for b.Loop() {
		r.Push(v)
		r.PopInto(&v)
	}
}

// PushFrom copies the entry it is given: changing the original afterwards does not change the
// ring's, and entries pushed with Push and PushFrom keep one order.
func TestPushFromCopies(t *testing.T) {
	type big struct {
		s string
		n [4]int
	}
	var r ring.Ring[big]
	v := big{s: "a", n: [4]int{1}}
	r.PushFrom(&v)
	v.s, v.n[0] = "changed", 9
	r.Push(big{s: "b"})
	r.PushFrom(&big{s: "c"})
	got := drain(&r)
	want := []big{{s: "a", n: [4]int{1}}, {s: "b"}, {s: "c"}}
	if !slices.Equal(got, want) {
		t.Fatalf("drained %v; want %v", got, want)
	}
}
