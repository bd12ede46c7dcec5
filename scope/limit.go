package scope

import "sync"

// limiter runs the tasks of a bounded scope on at most limit reused workers.
//
// A task holds a slot from the moment Go accepts it until it has ended, so at most limit tasks
// are accepted and not ended; Go waits for a slot. Accepted tasks wait in a queue that the
// workers take them from. A parked worker is woken only when no other worker is already on its
// way to the queue (spare == 0), and a worker that takes a task and leaves more behind makes
// sure the next one is on its way. So a burst of short tasks is run by the workers that are
// awake, without a wake-up per task, while a task that blocks never keeps the queue waiting:
// the slots bound the queue plus the running tasks to limit, and there are up to limit
// workers, so a worker not running a task is always free for the queue.
type limiter struct {
	limit int
	freed chan struct{} // a slot may be free: a hint for a waiting Go, which checks again

	mu       sync.Mutex
	queue    ring      // tasks accepted and not yet taken by a worker
	held     int       // slots held: len(queue) + tasks taken and not ended; <= limit
	waiters  int       // calls of Go waiting for a slot
	spare    int       // workers woken or started that have not yet looked at the queue
	idle     []*parked // parked workers, the last parked first
	nworkers int       // workers started and not exited, <= limit
	stopping bool      // Run has joined every task: idle workers exit

	workers sync.WaitGroup // owns the workers; Run waits for it
}

// parked is a worker waiting for work; wake, with room for one, never blocks its sender.
type parked struct{ wake chan struct{} }

func newLimiter(limit int) *limiter {
	return &limiter{limit: limit, freed: make(chan struct{}, 1)}
}

// handOff takes a slot for t, waiting for one if block is set (or for the scope's
// cancellation, which skips t), and queues t for a worker. It reports whether t was accepted
// or skipped (false only if block is not set and every slot is held).
func (s *Scope) handOff(t task, block bool) bool {
	l := s.lim
	l.mu.Lock()
	for l.held >= l.limit {
		if !block {
			l.mu.Unlock()
			s.wg.Done()
			return false
		}
		l.waiters++
		l.mu.Unlock()
		select {
		case <-l.freed:
		case <-s.done:
			l.mu.Lock()
			l.waiters--
			l.mu.Unlock()
			s.skip(&t)
			s.wg.Done()
			return true
		}
		l.mu.Lock()
		l.waiters--
	}
	if l.stopping {
		l.mu.Unlock()
		s.wg.Done()
		panic("scope: task started after Run returned")
	}
	l.held++
	l.queue.push(t)
	s.wakeLocked()
	if l.waiters > 0 && l.held < l.limit {
		l.hint() // more slots are free: pass the hint on to the next waiter
	}
	l.mu.Unlock()
	return true
}

// wakeLocked makes sure a worker is on its way to the queue: a spare one, an idle one woken,
// or a new one. If none of those can be had, every worker exists and, as the queue is not
// empty, at least one is not running a task: it is returning to the queue. l.mu must be held.
func (s *Scope) wakeLocked() {
	l := s.lim
	if l.spare > 0 {
		return
	}
	if k := len(l.idle); k > 0 {
		w := l.idle[k-1]
		l.idle[k-1] = nil
		l.idle = l.idle[:k-1]
		l.spare++
		w.wake <- struct{}{}
		return
	}
	if l.nworkers < l.limit {
		l.nworkers++
		l.spare++
		l.workers.Add(1)
		go s.worker()
	}
}

func (l *limiter) hint() {
	select {
	case l.freed <- struct{}{}:
	default: // a hint is pending already
	}
}

// worker takes tasks from the queue and runs them (or skips them, once the scope is
// cancelled), and parks while the queue is empty, until Run stops the workers.
func (s *Scope) worker() {
	l := s.lim
	s.labels()
	me := &parked{wake: make(chan struct{}, 1)}
	spare, ran, exited := true, false, false
	defer func() {
		if exited {
			l.workers.Done()
			return
		}
		// A task called runtime.Goexit, which ends this goroutine whatever we do: free its
		// slot, and if tasks are queued, make sure a worker comes for them.
		l.mu.Lock()
		l.nworkers--
		s.freeLocked()
		if l.queue.len() > 0 {
			s.wakeLocked()
		}
		l.mu.Unlock()
		l.workers.Done()
	}()
	for {
		l.mu.Lock()
		if ran {
			s.freeLocked()
			ran = false
		}
		if spare {
			l.spare--
			spare = false
		}
		if l.queue.len() == 0 {
			if l.stopping {
				l.nworkers--
				l.mu.Unlock()
				exited = true
				return
			}
			l.idle = append(l.idle, me)
			l.mu.Unlock()
			<-me.wake
			spare = true
			continue
		}
		t := l.queue.pop()
		if l.queue.len() > 0 {
			s.wakeLocked()
		}
		l.mu.Unlock()
		ran = true
		select {
		case <-s.done:
			// Accepted before the scope was cancelled but not started: skipped, as if Go had
			// seen the cancellation.
			s.skip(&t)
			s.wg.Done()
		default:
			s.run(t)
		}
	}
}

// freeLocked frees the slot of a task that has ended. l.mu must be held.
func (s *Scope) freeLocked() {
	l := s.lim
	l.held--
	if l.waiters > 0 {
		l.hint()
	}
}

// stop ends the workers once every task has ended.
func (l *limiter) stop() {
	l.mu.Lock()
	l.stopping = true
	for i, w := range l.idle {
		w.wake <- struct{}{}
		l.idle[i] = nil
	}
	l.idle = l.idle[:0]
	l.mu.Unlock()
	l.workers.Wait()
}

// ring is a FIFO of tasks that grows as needed; the slots bound it to the scope's limit.
type ring struct {
	buf  []task
	head int
	n    int
}

func (r *ring) len() int { return r.n }

func (r *ring) push(t task) {
	if r.n == len(r.buf) {
		buf := make([]task, max(8, 2*len(r.buf)))
		for i := range r.n {
			buf[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = buf, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = t
	r.n++
}

func (r *ring) pop() task {
	t := r.buf[r.head]
	r.buf[r.head] = task{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return t
}
