package pool

// taskRing is the pool's queue: internal/ring's FIFO ring written out for task, because the
// generic ring's methods are not inlined on the pool's hot path (BenchmarkPoolSubmit shows
// the difference). Keep the two alike; ring's tests describe the behaviour.
type taskRing struct {
	buf          []task
	head, n      int
	first, limit int // the first allocation, and the most entries it grows to
}

func newTaskRing(first, limit int) taskRing { return taskRing{first: first, limit: limit} }

// Len returns the number of entries.
func (r *taskRing) Len() int { return r.n }

// Push adds *t at the back.
func (r *taskRing) Push(t *task) {
	if r.n == len(r.buf) {
		r.grow()
	}
	i := r.head + r.n
	if i >= len(r.buf) { // a compare, not a division
		i -= len(r.buf)
	}
	r.buf[i] = *t
	r.n++
}

// grow doubles the buffer within the ring's bounds, keeping the entries in order.
func (r *taskRing) grow() {
	c := max(2*len(r.buf), r.first)
	if r.limit > 0 {
		c = max(min(c, r.limit), r.n+1)
	}
	buf := make([]task, c)
	for i := range r.n {
		buf[i] = r.buf[r.index(i)]
	}
	r.buf, r.head = buf, 0
}

func (r *taskRing) index(i int) int {
	i += r.head
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return i
}

// Pop removes and returns the oldest entry. The ring must not be empty.
func (r *taskRing) Pop() task {
	var t task
	r.PopInto(&t)
	return t
}

// PopInto removes the oldest entry into *t, clearing its slot. The ring must not be empty.
func (r *taskRing) PopInto(t *task) {
	*t = r.buf[r.head]
	r.buf[r.head] = task{}
	r.head++
	if r.head == len(r.buf) {
		r.head = 0
	}
	r.n--
}

// Compact removes the entries for which keep reports false, keeping the others in order.
func (r *taskRing) Compact(keep func(*task) bool) {
	j := 0
	for i := range r.n {
		t := &r.buf[r.index(i)]
		if !keep(t) {
			continue
		}
		r.buf[r.index(j)] = *t // j <= i: never overwrites an entry not yet looked at
		j++
	}
	for i := j; i < r.n; i++ {
		r.buf[r.index(i)] = task{}
	}
	r.n = j
}

// Reset empties the ring and lets its buffer go.
func (r *taskRing) Reset() { r.buf, r.head, r.n = nil, 0, 0 }
