// Package lease times the handlers of a consumer's workers against the
// consumer's lease, and lets the consumer's renewals act on a running
// handler, with no lock and no timer on a worker's path from one job to the
// next.
//
// Each worker owns a [Slot]: the lease state of the job it handles and the
// context of its handler. One [Keeper] per consumer watches every slot from
// its own goroutine ([Keeper.Run]) and cancels, with cause [driver.ErrLeaseExpired],
// a handler that has run for the lease.
//
// The contract:
//   - Only the slot's worker calls [Keeper.Start] and [Slot.End], in turn:
//     Start before its handler runs, End once it has returned. End takes no
//     lock unless a claim holds the slot; Start takes one only to replace a
//     context that the previous job's handler left cancelled.
//   - Any other goroutine acts on a running handler only under a claim:
//     [Slot.Claim] or [Slot.ClaimGen], then [Slot.Release]. A claim
//     excludes the other claims, and End waits for it: whatever the holder
//     reads of the worker's job between its claim and its release is the
//     job of the handler it claimed, and a [Slot.Cancel] under the claim
//     reaches that handler, never the next one.
//   - A Start synchronizes before the keeper's first look that sees it, and
//     the keeper's cancellation of a handler before the End that reports it
//     expired.
package lease

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// The bits of Slot.st, below the generation (the count of Starts, shifted
// by shift).
const (
	// running: a handler runs (from Start to End).
	running = 1 << iota
	// claimed: a claim holds the generation, under Slot.mu. End cannot end
	// the lease under it: it waits for mu instead.
	claimed
	// expired: the keeper cancelled this generation's handler at the end
	// of its lease.
	expired

	shift = iota
)

// Slot is the lease of one worker's current job. The zero Slot is not
// usable: [New] prepares the slots it is given.
type Slot struct {
	st atomic.Uint64

	// The keeper's own record of the handler it saw running: its
	// generation, and when the keeper first saw it (a time at or after
	// its start, as time since the keeper began).
	seenGen uint64
	seenAt  time.Duration

	mu     sync.Mutex // serialises the claims on st, and guards the fields below
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Keeper times the handlers of a set of slots (see the package doc).
type Keeper struct {
	base  context.Context // parent of the handlers' contexts
	lease time.Duration
	slots []*Slot
	done  <-chan struct{} // closed once no worker can Start again

	// The keeper's clock: its last reading while it samples the running
	// handlers, nil while it is parked (see Now).
	clock atomic.Pointer[time.Time]
	// parked is set while the keeper waits for a handler to start; the
	// Start that clears it wakes the keeper through wake (capacity 1).
	parked atomic.Bool
	wake   chan struct{}
}

// New returns the keeper of slots, whose handlers' contexts derive from base
// and run for at most lease. Its Run returns once done is closed, which the
// caller closes when no worker will call Start again.
func New(base context.Context, lease time.Duration, slots []*Slot, done <-chan struct{}) *Keeper {
	for _, s := range slots {
		s.ctx, s.cancel = context.WithCancelCause(base)
	}
	return &Keeper{base: base, lease: lease, slots: slots, done: done, wake: make(chan struct{}, 1)}
}

// The bounds of sampleEvery: below minSample the keeper's timer would fire
// faster than it is useful (a timer storm); above maxSample the clock it
// keeps for the workers (see Now) would lag the time too far.
const (
	minSample = 100 * time.Microsecond
	maxSample = 10 * time.Millisecond
)

// sampleEvery is how often Run looks at the running handlers, and so how
// late past its lease a handler may be cancelled: a sixteenth of the lease,
// within [minSample, maxSample].
func (k *Keeper) sampleEvery() time.Duration {
	return min(max(k.lease/16, minSample), maxSample)
}

// Run is the keeper's loop, on a goroutine of its own. While handlers run,
// it wakes every sampleEvery and:
//   - reads the clock for the workers (see Now);
//   - cancels, with cause [driver.ErrLeaseExpired], a handler that has run
//     for the lease. A handler is timed from the first reading of the clock
//     the keeper took after it saw the handler running, which is after its
//     start: so it is never cancelled early, and it is cancelled at most
//     sampleEvery late when the keeper is on time. A job costs no timer of
//     its own.
//
// When no handler runs and none started since its last look, it parks
// until one starts. It returns once done is closed.
func (k *Keeper) Run() {
	origin := time.Now() // the keeper's times are durations since origin
	states := make([]uint64, len(k.slots))
	prev := make([]uint64, len(k.slots)) // states at the last look
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		// The states first, then the clock: a handler seen running
		// started before the reading.
		busy := false
		for i, s := range k.slots {
			states[i] = s.st.Load()
			// Running, or started since the last look: with short
			// handlers, a look often falls between two jobs, and parking
			// then would send the workers back to the clock.
			busy = busy || states[i]&running != 0 || states[i]>>shift != prev[i]>>shift
		}
		copy(prev, states)
		if !busy {
			if !k.park() {
				return
			}
			continue
		}
		now := time.Now()
		k.clock.Store(&now)
		d := k.sample(states, now.Sub(origin))
		if t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
		case <-k.done:
			return
		}
	}
}

// sample acts on the states of the slots at since (see Run): it cancels the
// handlers past their lease, and returns how long to wait until the next
// look.
func (k *Keeper) sample(states []uint64, since time.Duration) time.Duration {
	wakeAt := since + k.sampleEvery()
	for i, s := range k.slots {
		st := states[i]
		if st&(running|expired) != running {
			continue
		}
		if g := st >> shift; g != s.seenGen {
			s.seenGen, s.seenAt = g, since
		} else if since-s.seenAt >= k.lease {
			s.expire(st)
			continue
		}
		wakeAt = min(wakeAt, s.seenAt+k.lease)
	}
	return wakeAt - since
}

// park waits until a handler starts, and reports false if done was closed
// instead. It clears the clock first: the workers read it themselves while
// the keeper is away.
func (k *Keeper) park() bool {
	k.clock.Store(nil)
	k.parked.Store(true)
	// Start sets running, then looks at parked; this sets parked, then
	// looks at running: one of the two sees the other.
	for _, s := range k.slots {
		if s.st.Load()&running != 0 {
			k.parked.Store(false)
			return true
		}
	}
	select {
	case <-k.wake:
		return true
	case <-k.done:
		return false
	}
}

// Now returns the keeper's last reading of the clock and true while it
// samples running handlers: a reading at most its sampling period old when
// the keeper is on time, never ahead of the time. It returns false while
// the keeper is parked: the caller reads the clock itself.
func (k *Keeper) Now() (time.Time, bool) {
	if t := k.clock.Load(); t != nil {
		return *t, true
	}
	return time.Time{}, false
}

// Start starts the lease of s's next job and returns its handler's context.
// It takes s's lock only to replace a context cancelled by the previous
// job, and wakes the keeper if it is parked. Only s's worker calls it.
func (k *Keeper) Start(s *Slot) context.Context {
	if s.ctx.Err() != nil { // cancelled by the previous job
		s.mu.Lock()
		s.ctx, s.cancel = context.WithCancelCause(k.base)
		s.mu.Unlock()
	}
	s.st.Store((s.st.Load()>>shift+1)<<shift | running)
	if k.parked.Load() && k.parked.CompareAndSwap(true, false) {
		select {
		case k.wake <- struct{}{}:
		default: // a wake-up is pending
		}
	}
	return s.ctx
}

// Context returns the context of s's current or last handler. Only s's
// worker calls it.
func (s *Slot) Context() context.Context { return s.ctx }

// End ends the lease of s's job and reports whether the keeper cancelled
// its handler as expired. Unless a claim holds the slot, it takes no lock.
// Only s's worker calls it, after Start.
func (s *Slot) End() bool {
	st := s.st.Load()
	if st&claimed == 0 && s.st.CompareAndSwap(st, st&^running) {
		return st&expired != 0
	}
	return s.endClaimed()
}

// endClaimed is End when a claim holds the slot. A claim is released under
// mu: once mu is ours, nobody holds one.
func (s *Slot) endClaimed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st.Load()
	s.st.Store(st &^ running)
	return st&expired != 0
}

// Claim claims s's running handler and returns its generation, with s
// locked: the caller reads what it needs of the worker's job, may Cancel,
// and then calls Release with the generation. It returns false, with s
// unlocked, if no handler runs.
func (s *Slot) Claim() (gen uint64, ok bool) {
	s.mu.Lock()
	for {
		st := s.st.Load()
		if st&running == 0 {
			s.mu.Unlock()
			return st, false
		}
		if s.st.CompareAndSwap(st, st|claimed) {
			return st, true
		}
	}
}

// ClaimGen claims the handler of generation gen (from Claim), as Claim
// does, and reports true; or false, with s unlocked, if the worker has
// moved on since (the handler ended, or the keeper expired it).
func (s *Slot) ClaimGen(gen uint64) bool {
	s.mu.Lock()
	if s.st.CompareAndSwap(gen, gen|claimed) {
		return true
	}
	s.mu.Unlock()
	return false
}

// Cancel cancels the claimed handler's context with cause. The caller
// holds the claim.
func (s *Slot) Cancel(cause error) { s.cancel(cause) }

// Release releases the claim of generation gen and unlocks s.
func (s *Slot) Release(gen uint64) {
	s.st.Store(gen)
	s.mu.Unlock()
}

// expire cancels the handler of generation st, which has run for its
// lease, unless the worker has moved on.
func (s *Slot) expire(st uint64) {
	if s.ClaimGen(st) {
		s.cancel(driver.ErrLeaseExpired)
		s.Release(st | expired)
	}
}
