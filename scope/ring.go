package scope

// taskRing is the limiter's queue of accepted tasks: internal/ring's FIFO ring written out for
// task, as pool's is for its own task, because a generic ring of a struct copies its entries
// through the instantiation's dictionary and its Push is not inlined (BenchmarkScopeLimit8
// shows the difference). Keep it alike to internal/ring, whose tests describe the behaviour.
// The slots bound it to the scope's limit.
type taskRing struct {
	buf     []task
	head, n int
}

// Len returns the number of tasks queued.
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

// grow doubles the buffer (from 8 tasks), keeping the tasks in order.
func (r *taskRing) grow() {
	buf := make([]task, max(2*len(r.buf), 8))
	for i := range r.n {
		j := r.head + i
		if j >= len(r.buf) {
			j -= len(r.buf)
		}
		buf[i] = r.buf[j]
	}
	r.buf, r.head = buf, 0
}

// PopInto removes the oldest task into *t, clearing its slot. The ring must not be empty.
func (r *taskRing) PopInto(t *task) {
	*t = r.buf[r.head]
	r.buf[r.head] = task{}
	r.head++
	if r.head == len(r.buf) {
		r.head = 0
	}
	r.n--
}
