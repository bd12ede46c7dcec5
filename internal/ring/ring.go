// Package ring is the FIFO queue that corral's packages keep their waiting work in: a
// circular buffer that grows by doubling and never shrinks (but for Reset).
//
// It offers:
//   - Push and PushFrom (at the back), Pop and PopInto (from the front), Front, Len: O(1), no
//     allocation once the buffer has room. Pop and PopInto zero the slot they free, so the
//     ring keeps no reference to what it handed out.
//   - Compact, which drops the entries a func rejects, keeping the order of the others, in
//     place (pool drops the tombstones of claimed group tasks with it).
//   - Reset, which empties the ring and releases its buffer; Cap, the size of the buffer.
//   - Growth bounds: the zero Ring is ready to use and starts at 8 entries; New(first, limit)
//     starts at first entries and never allocates more than limit (pool, whose queue
//     capacity is fixed, and a fixed window like scope.MapSeq's: New(n, n)). A Ring does not
//     refuse a Push past limit: bounding the entries is the caller's job (limit only caps an
//     allocation), and a Push past it grows the buffer to hold it.
//
// A Ring is not safe for concurrent use: its owner guards it (pool and scope with their
// mutex). It must not be copied after first use.
//
// Users: pool's queue of tasks, the bounded scope's queue of accepted tasks, scope.MapSeq's
// window, and the FIFO half of the in-memory backend's ready queue (queue/memory/entry.go).
package ring

// Ring is a FIFO of values of type T. See the package doc.
type Ring[T any] struct {
	buf   []T
	head  int // buf[head] is the oldest of n entries
	n     int
	first int // the first allocation; 0 means defaultFirst
	limit int // the largest allocation; 0 means none
}

// defaultFirst is the first allocation of a zero Ring.
const defaultFirst = 8

// New returns an empty ring whose buffer starts at first entries (when first is pushed) and is
// never allocated larger than limit entries while it holds no more than limit. limit 0 means
// no bound; first 0 means 8.
func New[T any](first, limit int) Ring[T] {
	return Ring[T]{first: first, limit: limit}
}

// Len returns the number of entries.
func (r *Ring[T]) Len() int { return r.n }

// Push adds v at the back.
func (r *Ring[T]) Push(v T) { r.PushFrom(&v) }

// PushFrom adds a copy of *v at the back: for a large T (pool's and scope's tasks), without
// the copy that passing v to Push makes.
func (r *Ring[T]) PushFrom(v *T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	i := r.head + r.n
	if i >= len(r.buf) { // a compare, not a division (%): Push and Pop are on hot paths
		i -= len(r.buf)
	}
	r.buf[i] = *v
	r.n++
}

// grow doubles the buffer, within the ring's bounds, keeping the entries in order.
func (r *Ring[T]) grow() {
	first := r.first
	if first == 0 {
		first = defaultFirst
	}
	c := max(2*len(r.buf), first)
	if r.limit > 0 {
		c = max(min(c, r.limit), r.n+1)
	}
	buf := make([]T, c)
	for i := range r.n {
		buf[i] = r.buf[r.index(i)]
	}
	r.buf, r.head = buf, 0
}

// index returns the position in buf of the i-th oldest entry, i < len(buf).
func (r *Ring[T]) index(i int) int {
	i += r.head
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return i
}

// Cap returns the number of entries the ring's buffer holds before it grows.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Front returns the oldest entry, which stays in the ring. The ring must not be empty.
func (r *Ring[T]) Front() *T { return &r.buf[r.head] }

// Pop removes the oldest entry and returns it. The ring must not be empty.
func (r *Ring[T]) Pop() T {
	var v T
	r.PopInto(&v)
	return v
}

// PopInto removes the oldest entry into *v (for a large T, without an intermediate copy). The
// ring must not be empty.
func (r *Ring[T]) PopInto(v *T) {
	p := &r.buf[r.head] // one bounds check; and *new(T) stores zeros, where a zero variable is copied
	*v = *p
	*p = *new(T)
	r.head++
	if r.head == len(r.buf) {
		r.head = 0
	}
	r.n--
}

// Compact removes the entries for which keep reports false, keeping the order of the others.
// It calls keep once per entry, oldest first.
func (r *Ring[T]) Compact(keep func(*T) bool) {
	var zero T
	j := 0
	for i := range r.n {
		v := &r.buf[r.index(i)]
		if !keep(v) {
			continue
		}
		r.buf[r.index(j)] = *v // j <= i: never overwrites an entry not yet looked at
		j++
	}
	for i := j; i < r.n; i++ {
		r.buf[r.index(i)] = zero
	}
	r.n = j
}

// Reset empties the ring and releases its buffer; its bounds stay.
func (r *Ring[T]) Reset() {
	r.buf, r.head, r.n = nil, 0, 0
}
