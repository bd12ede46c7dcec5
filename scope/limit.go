package scope

import (
	"context"
	"sync"

	"github.com/corral-go/corral/internal/ring"
	"github.com/corral-go/corral/internal/wake"
)

// limiter runs the tasks of a bounded scope on at most limit reused workers.
//
// A task holds a slot from the moment Go accepts it until it has ended (and its worker frees
// the slot, before it publishes the end), so at most limit tasks are accepted and not ended;
// Go waits for a slot. Accepted tasks wait in a queue that the workers take them from. A
// parked worker is woken only when no other worker is already on its way to the queue (no
// spare: idle.Waking() == 0), and a worker that takes a task and leaves more behind makes
// sure the next one is on its way. So a burst of short tasks is run by the workers that are
// awake, without a wake-up per task, while a task that blocks never keeps the queue waiting:
// the slots bound the queue plus the running tasks to limit, and there are up to limit
// workers, so a worker not running a task is always free for the queue.
type limiter struct {
	limit int
	freed chan struct{} // a slot may be free: a hint for a waiting Go, which checks again

	mu       sync.Mutex         // guards the fields below
	queue    ring.Ring[task]    // tasks accepted and not yet taken; the slots bound it to limit
	held     int                // slots held: queue.Len() + tasks taken and not ended; <= limit
	waiters  int                // calls of Go waiting for a slot
	idle     wake.List[*parked] // parked workers, last parked first; Waking() counts the spare ones
	nworkers int                // workers started and not exited, <= limit
	stopping bool               // the join closed the scope: idle workers exit

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
			s.tasks.done()
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
			s.tasks.done()
			return true
		}
		l.mu.Lock()
		l.waiters--
	}
	l.held++
	l.queue.PushFrom(&t)
	s.wakeLocked()
	if l.waiters > 0 && l.held < l.limit {
		l.hint() // more slots are free: pass the hint on to the next waiter
	}
	l.mu.Unlock()
	return true
}

// wakeLocked makes sure a worker is on its way to the queue: a spare one (woken or started,
// not yet at the queue), an idle one woken, or a new one. If none of those can be had, every
// worker exists and, as the queue is not empty, at least one is not running a task: it is
// returning to the queue. l.mu must be held.
func (s *Scope) wakeLocked() {
	l := s.lim
	if l.idle.Waking() > 0 { // a spare worker
		return
	}
	if w, ok := l.idle.WakeNewest(); ok {
		w.wake <- struct{}{}
		return
	}
	if l.nworkers < l.limit {
		l.nworkers++
		l.idle.Expect()
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
//
// A task's end is published (its Handle resolved, the join's count released) only after its
// slot is free, so that whoever sees the end can start a task in the slot: the worker frees
// the slot as it next takes the lock, to take the next task or to park, and publishes after.
func (s *Scope) worker() {
	l := s.lim
	s.labels()
	me := &parked{wake: make(chan struct{}, 1)}
	var t task    // the task taken last
	held := false // t holds its slot, and its end is not yet published
	spare, exited := true, false
	defer func() {
		if exited {
			l.workers.Done()
			return
		}
		// A task called runtime.Goexit, which ends this goroutine whatever we do: free its
		// slot, if tasks are queued make sure a worker comes for them, and publish its end.
		l.mu.Lock()
		l.nworkers--
		s.freeLocked()
		if l.queue.Len() > 0 {
			s.wakeLocked()
		}
		l.mu.Unlock()
		s.publish(&t)
		l.workers.Done()
	}()
	for {
		l.mu.Lock()
		if held {
			s.freeLocked()
		}
		if spare {
			l.idle.Arrived()
			spare = false
		}
		if l.queue.Len() == 0 {
			if l.stopping { // the join closed the scope: every end was published
				l.nworkers--
				l.mu.Unlock()
				exited = true
				return
			}
			l.idle.Park(me)
			l.mu.Unlock()
			if held {
				s.publish(&t)
				held = false
			}
			<-me.wake
			spare = true
			continue
		}
		var next task
		l.queue.PopInto(&next)
		if l.queue.Len() > 0 {
			s.wakeLocked()
		}
		l.mu.Unlock()
		if held {
			s.publish(&t)
		}
		t, held = next, true
		select {
		case <-s.done:
			// Accepted before the scope was cancelled but not started: skipped, as if Go had
			// seen the cancellation.
			s.skipped.Add(1)
			t.err = context.Cause(s.ctx)
		default:
			s.run(&t)
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
	for _, w := range l.idle.WakeAll() { // each counted spare, and each Arrives before it exits
		w.wake <- struct{}{}
	}
	l.mu.Unlock()
	l.workers.Wait()
}
