// Package share is the mechanism behind queue.Share: a set of worker slots
// that several consumers (lanes) take turns at, by stride scheduling
// (weighted) or by priority (strict), each lane capped.
//
// A worker that has a job asks its lane's Set for a slot (Acquire) and
// gives it back when the job is settled (Release). A free slot goes to a
// waiting worker at once, so the Set is work-conserving; a lane back from
// idle gets no credit for the turns it did not take. A Set is safe for
// concurrent use and starts no goroutine.
package share

import (
	"context"
	"slices"
	"sync"
	"time"
)

// MaxWeight is the highest weight of a lane; with it a stride is still at
// least 4,294 (a rounding error under 0.03%).
const MaxWeight = 1_000_000

// strideOne is the pass of a turn at weight 1.
const strideOne = 1 << 32

// rebaseAt is the pass past which give moves every pass down, so that
// passes never wrap around.
const rebaseAt = 1 << 62

// Set is a set of slots shared by lanes. X is what its user keeps with
// each lane.
type Set[X any] struct {
	size   int
	strict bool

	mu      sync.Mutex // guards the fields below
	free    int        // slots not held
	waiting int        // workers waiting for a slot, over every lane
	pass    uint64     // the pass of the last turn given (see Lane.pass)
	lanes   []*Lane[X] // in the order they joined
}

// New returns a Set of size slots, weighted, or by priority if strict.
func New[X any](size int, strict bool) *Set[X] {
	return &Set[X]{size: size, strict: strict, free: size}
}

// Lane is one consumer's place in a Set.
type Lane[X any] struct {
	name   string
	weight int
	cap    int
	stride uint64 // the pass a turn costs: strideOne / weight
	x      X

	// Guarded by the Set's mu.
	pass    uint64          // stride scheduling's pass: the lowest pass waiting goes first
	waiters []chan struct{} // the workers waiting for a slot, oldest first
	running int
	turns   uint64
	busy    time.Duration
}

// Snap is one lane at one instant.
type Snap[X any] struct {
	Name             string
	Weight, Cap      int
	Running, Waiting int
	Turns            uint64
	Busy             time.Duration
	X                X
}

// Join adds a lane of the name and weight (1 to MaxWeight), which may hold
// at most limit slots (and no more than the Set has), keeping x with it.
func (s *Set[X]) Join(name string, weight, limit int, x X) *Lane[X] {
	l := &Lane[X]{name: name, weight: weight, cap: min(limit, s.size), stride: strideOne / uint64(weight), x: x}
	s.mu.Lock()
	s.lanes = append(s.lanes, l)
	s.mu.Unlock()
	return l
}

// Leave takes l out of s, once its workers have returned.
func (s *Set[X]) Leave(l *Lane[X]) {
	s.mu.Lock()
	s.lanes = slices.DeleteFunc(s.lanes, func(x *Lane[X]) bool { return x == l })
	s.mu.Unlock()
}

// Snapshot returns the lanes of s, in the order they joined.
func (s *Set[X]) Snapshot() []Snap[X] {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Snap[X], len(s.lanes))
	for i, l := range s.lanes {
		out[i] = Snap[X]{Name: l.name, Weight: l.weight, Cap: l.cap, Running: l.running,
			Waiting: len(l.waiters), Turns: l.turns, Busy: l.busy, X: l.x}
	}
	return out
}

// Acquire waits for a slot for l, and reports whether it got one; false if
// ctx ended first. grant is the worker's own channel (capacity 1), through
// which a slot is handed over. While it waits, renew is called every
// renewEvery; if renew reports false, Acquire gives up and returns false.
func (s *Set[X]) Acquire(ctx context.Context, l *Lane[X], grant chan struct{}, renewEvery time.Duration, renew func() bool) bool {
	s.mu.Lock()
	if s.free > 0 && s.waiting == 0 && l.running < l.cap {
		s.giveLocked(l)
		s.mu.Unlock()
		return true
	}
	if len(l.waiters) == 0 && l.running == 0 {
		// Back from idle: no credit for the turns it did not take.
		l.pass = max(l.pass, s.pass)
	}
	l.waiters = append(l.waiters, grant)
	s.waiting++
	s.dispatchLocked()
	s.mu.Unlock()

	t := time.NewTimer(renewEvery)
	defer t.Stop()
	for {
		select {
		case <-grant:
			return true
		case <-ctx.Done():
		case <-t.C:
			if renew() {
				t.Reset(renewEvery)
				continue
			}
		}
		return s.withdraw(l, grant)
	}
}

// withdraw takes the waiting worker with grant off l's waiters, and
// reports false; if the slot was given to it meanwhile, it gives the slot
// back.
func (s *Set[X]) withdraw(l *Lane[X], grant chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(l.waiters, grant); i >= 0 {
		l.waiters = slices.Delete(l.waiters, i, i+1)
		s.waiting--
		return false
	}
	<-grant // given meanwhile: the send happened under mu
	s.releaseLocked(l, 0)
	return false
}

// Release gives back the slot l held for busy.
func (s *Set[X]) Release(l *Lane[X], busy time.Duration) {
	s.mu.Lock()
	s.releaseLocked(l, busy)
	s.mu.Unlock()
}

// releaseLocked is Release, with s.mu held.
func (s *Set[X]) releaseLocked(l *Lane[X], busy time.Duration) {
	s.free++
	l.running--
	l.busy += busy
	s.dispatchLocked()
}

// giveLocked gives l a slot. s.mu held.
func (s *Set[X]) giveLocked(l *Lane[X]) {
	s.free--
	l.running++
	l.turns++
	s.pass = l.pass
	l.pass += l.stride
	if s.pass > rebaseAt {
		// Every lane waiting has a pass at or above s.pass, less a stride;
		// a lower one (idle, or held back by its cap) goes first anyway.
		base := s.pass - strideOne
		for _, x := range s.lanes {
			x.pass = max(x.pass, base) - base
		}
		s.pass -= base
	}
}

// dispatchLocked hands the free slots to the waiting workers. s.mu held.
func (s *Set[X]) dispatchLocked() {
	for s.free > 0 && s.waiting > 0 {
		l := s.nextLocked()
		if l == nil {
			return // every lane waiting is at its cap
		}
		grant := l.waiters[0]
		l.waiters = slices.Delete(l.waiters, 0, 1)
		s.waiting--
		s.giveLocked(l)
		grant <- struct{}{} // capacity 1, and its worker waits on nothing else
	}
}

// nextLocked returns the lane whose waiting worker goes next: the lowest
// pass (weighted), or the highest weight and then the lowest pass
// (strict); ties go to the lane that joined first. Lanes at their cap wait.
// It returns nil if every lane waiting is at its cap. s.mu held.
func (s *Set[X]) nextLocked() *Lane[X] {
	var best *Lane[X]
	for _, l := range s.lanes {
		if len(l.waiters) == 0 || l.running >= l.cap {
			continue
		}
		if best == nil || s.strict && l.weight > best.weight ||
			(!s.strict || l.weight == best.weight) && l.pass < best.pass {
			best = l
		}
	}
	return best
}
