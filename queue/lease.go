package queue

import (
	"context"
	"errors"
	"time"

	"github.com/corral-go/corral/internal/panics"
	"github.com/corral-go/corral/queue/driver"
)

// renewEvery is how often renewLoop renews the backend leases of the
// running handlers' jobs: a third of the backend lease, so that two
// renewals can be late before a lease ends. There is no floor: a floor
// could exceed a short lease.
func (c *Consumer[T]) renewEvery() time.Duration {
	return max(c.backendLease()/3, 1)
}

// sampleEvery is how often keep looks at the running handlers, and so how
// late past its lease a handler may be cancelled: a sixteenth of the lease,
// but no less than 100µs (a timer storm) and no more than 10ms (the
// keeper's clock should stay close to the time: see Consumer.clock).
func (c *Consumer[T]) sampleEvery() time.Duration {
	return min(max(c.opts.lease/16, 100*time.Microsecond), 10*time.Millisecond)
}

// keep is the consumer's keeper. While handlers run, it wakes every
// [Consumer.sampleEvery] and:
//   - reads the clock for the workers (see Consumer.clock), so that a job
//     taken with the ack of the last one is dated without a clock read;
//   - cancels, with cause [ErrLeaseExpired], a handler that has run for the
//     lease. A handler is timed from the first reading of the clock the
//     keeper took after it saw the handler running, which is after its
//     start: so it is never cancelled early, and it is cancelled at most
//     sampleEvery late (when the keeper is on time: a machine whose every
//     core is busy can make it late). A job costs no timer of its own.
//
// When no handler runs and none started since its last look, it parks
// until one starts (see startLease). It returns once every worker loop has
// returned.
func (c *Consumer[T]) keep() {
	defer c.keepers.Done()
	origin := time.Now() // keep's times are durations since origin
	states := make([]uint64, len(c.workers))
	prev := make([]uint64, len(c.workers)) // states at the last look
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
		for i, w := range c.workers {
			states[i] = w.st.Load()
			// Running, or started since the last look: with short
			// handlers, a look often falls between two jobs, and parking
			// then would send the workers back to the clock.
			busy = busy || states[i]&stRunning != 0 || states[i]>>stShift != prev[i]>>stShift
		}
		copy(prev, states)
		if !busy {
			if !c.park() {
				return
			}
			continue
		}
		now := time.Now()
		c.clock.Store(&now)
		d := c.sample(states, now.Sub(origin))
		if t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
		case <-c.drained:
			return
		}
	}
}

// sample acts on the states of the workers' handlers at since (see keep):
// it cancels those past their lease, and returns how long to wait until the
// next look.
func (c *Consumer[T]) sample(states []uint64, since time.Duration) time.Duration {
	lease := c.opts.lease
	wakeAt := since + c.sampleEvery()
	for i, w := range c.workers {
		s := states[i]
		if s&(stRunning|stExpired) != stRunning {
			continue
		}
		if g := s >> stShift; g != w.seenGen {
			w.seenGen, w.seenAt = g, since
		} else if since-w.seenAt >= lease {
			w.expire(s)
			continue
		}
		wakeAt = min(wakeAt, w.seenAt+lease)
	}
	return wakeAt - since
}

// park waits until a handler starts, and reports false if every worker loop
// returned instead. It clears the clock first: the workers read it
// themselves while the keeper is away.
func (c *Consumer[T]) park() bool {
	c.clock.Store(nil)
	c.parked.Store(true)
	// A worker sets stRunning, then looks at parked; this sets parked,
	// then looks at stRunning: one of the two sees the other.
	for _, w := range c.workers {
		if w.st.Load()&stRunning != 0 {
			c.parked.Store(false)
			return true
		}
	}
	select {
	case <-c.wake:
		return true
	case <-c.drained:
		return false
	}
}

// renewLoop extends the backend leases of the running handlers' jobs every
// [Consumer.renewEvery], until every worker loop has returned: a handler
// still running after its ctx was cancelled keeps its job, so that no one
// else handles it meanwhile. It runs apart from keep, so that a slow
// backend delays renewals, never the handlers' deadlines.
func (c *Consumer[T]) renewLoop() {
	defer c.keepers.Done()
	t := time.NewTicker(c.renewEvery())
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-c.drained:
			return
		}
		c.renew()
	}
}

// renew extends the backend leases of the running handlers' jobs. Extend
// runs outside w.mu, on a copy of the delivery. If the backend says the
// lease was lost (the job may already be with someone else), the handler's
// ctx is cancelled with cause [ErrLeaseLost], provided the worker still
// holds that same delivery; if it says an operator cancelled the job
// ([Queue.Cancel]), with cause [ErrCanceled]: so a cancel reaches a
// running handler within one renewal period (renewEvery).
func (c *Consumer[T]) renew() {
	for _, w := range c.workers {
		w.mu.Lock()
		s, ok := w.claim()
		if !ok {
			w.mu.Unlock()
			continue
		}
		d := w.d
		w.st.Store(s) // release the claim
		w.mu.Unlock()
		err := c.extend(&d)
		if err == errLoopPanic {
			continue
		}
		c.observe(c.bg, err)
		if err == nil || c.bg.Err() != nil {
			continue
		}
		if errors.Is(err, ErrCanceled) {
			w.cancelJob(s)
			continue
		}
		// Only if the same handler still runs: a renewal that raced the
		// job's settling (the lease was lost because the job was acked)
		// affected no job, and a failed settle counts itself.
		w.mu.Lock()
		if w.st.CompareAndSwap(s, s|stClaimed) {
			c.q.c.backendErrors.Add(1)
			if errors.Is(err, ErrLeaseLost) {
				w.cancel(ErrLeaseLost)
			}
			w.st.Store(s)
		}
		w.mu.Unlock()
	}
}

// now returns the time to start a job at: the keeper's last reading while
// it runs, which is at most [Consumer.sampleEvery] old when the keeper is
// on time; else the queue's clock's.
func (c *Consumer[T]) now() time.Time {
	if t := c.clock.Load(); t != nil {
		return *t
	}
	return c.q.clk.Now()
}

// startLease starts the lease of a new job and returns its context. It
// takes w.mu only to replace a ctx cancelled by the previous job. It wakes
// the keeper if it is parked.
//
// From here until endLease, renewLoop renews the job's backend lease and
// the keeper times the handler. The checks before (decoding, attempts,
// start-by) settle the job at once, without a renewal.
func (w *worker[T]) startLease() context.Context {
	if w.ctx.Err() != nil { // cancelled by the previous job
		w.mu.Lock()
		w.ctx, w.cancel = context.WithCancelCause(w.c.base)
		w.mu.Unlock()
	}
	w.st.Store((w.st.Load()>>stShift+1)<<stShift | stRunning)
	if c := w.c; c.parked.Load() && c.parked.CompareAndSwap(true, false) {
		select {
		case c.wake <- struct{}{}:
		default: // a wake-up is pending
		}
	}
	return w.ctx
}

// claim claims the generation of a running handler, for renew to read w.d;
// it then stores the state claim returns to release it. w.mu held.
func (w *worker[T]) claim() (uint64, bool) {
	for {
		s := w.st.Load()
		if s&stRunning == 0 {
			return s, false
		}
		if w.st.CompareAndSwap(s, s|stClaimed) {
			return s, true
		}
	}
}

// cancelJob cancels the handler of generation state s with cause
// [ErrCanceled], unless the worker has moved on. Called by renew.
func (w *worker[T]) cancelJob(s uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.st.CompareAndSwap(s, s|stClaimed) {
		w.cancel(ErrCanceled)
		w.st.Store(s)
	}
}

// expire cancels the handler of generation state s, which has run for its
// lease, unless the worker has moved on. Called by the keeper.
func (w *worker[T]) expire(s uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.st.CompareAndSwap(s, s|stClaimed) {
		w.cancel(ErrLeaseExpired)
		w.st.Store(s | stExpired)
	}
}

// endLease ends the lease of the current job and reports whether it expired.
// Unless the keeper (expire) or renew holds the job (stClaimed), it takes
// no lock.
//
// The renewals of the job's lease stop here: the settle that follows takes
// far less than the time left on it (at least the handler's lease).
func (w *worker[T]) endLease() bool {
	s := w.st.Load()
	if s&stClaimed == 0 && w.st.CompareAndSwap(s, s&^stRunning) {
		return s&stExpired != 0
	}
	// A claim is released under mu: once it is ours, nobody holds one.
	w.mu.Lock()
	defer w.mu.Unlock()
	s = w.st.Load()
	w.st.Store(s &^ stRunning)
	return s&stExpired != 0
}

// extend renews the backend lease of d. A panic in the backend's Extend is
// recovered and kept for Close, as one on a worker is (see worker.exit),
// and stops intake; extend then returns errLoopPanic.
func (c *Consumer[T]) extend(d *driver.Delivery) (err error) {
	var catch panics.Catcher
	defer func() {
		if p := catch.Panic; p != nil {
			c.loopPanic.CompareAndSwap(nil, &PanicError{Where: callExtend.where(), Value: p.Value, Stack: p.Stack})
			c.recvCancel(errLoopPanic)
			err = errLoopPanic
		}
	}()
	defer catch.Recover()
	err = c.q.backend.Extend(c.bg, d, c.backendLease())
	catch.Returned()
	return err
}
