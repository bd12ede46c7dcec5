package queue

import (
	"errors"
	"time"

	"github.com/corral-go/corral/internal/clock"
	"github.com/corral-go/corral/internal/panics"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/lease"
)

// renewEvery is how often renewLoop renews the backend leases of the
// running handlers' jobs: a third of the backend lease, so that two
// renewals can be late before a lease ends. There is no floor: a floor
// could exceed a short lease.
func (c *Consumer[T]) renewEvery() time.Duration {
	return max(c.backendLease()/3, 1)
}

// renewLoop extends the backend leases of the running handlers' jobs every
// [Consumer.renewEvery], until every worker loop has returned: a handler
// still running after its ctx was cancelled keeps its job, so that no one
// else handles it meanwhile. It runs apart from the keeper, so that a slow
// backend delays renewals, never the handlers' deadlines.
func (c *Consumer[T]) renewLoop() {
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
// runs outside the slot's claim, on a copy of the delivery. If the backend says the
// lease was lost (the job may already be with someone else), the handler's
// ctx is cancelled with cause [ErrLeaseLost], provided the worker still
// holds that same delivery; if it says an operator cancelled the job
// ([Queue.Cancel]), with cause [ErrCanceled]: so a cancel reaches a
// running handler within one renewal period (renewEvery).
func (c *Consumer[T]) renew() {
	for _, w := range c.workers {
		gen, ok := w.ls.Claim()
		if !ok {
			continue
		}
		d := w.d
		w.ls.Release(gen)
		err := c.extend(&d)
		if err == errLoopPanic {
			continue
		}
		c.observe(c.bg, err)
		if err == nil || c.bg.Err() != nil {
			continue
		}
		// Only if the same handler still runs: a renewal that raced the
		// job's settling (the lease was lost because the job was acked)
		// affected no job, and a failed settle counts itself.
		if !w.ls.ClaimGen(gen) {
			continue
		}
		switch {
		case errors.Is(err, ErrCanceled):
			w.ls.Cancel(ErrCanceled)
		case errors.Is(err, ErrLeaseLost):
			c.q.c.BackendErrors.Add(1)
			w.ls.Cancel(ErrLeaseLost)
		default:
			c.q.c.BackendErrors.Add(1)
		}
		w.ls.Release(gen)
	}
}

// now returns the time to start a job at: the keeper k's last reading
// while it samples running handlers (see lease.Keeper.Now); else clk's. (A
// function, not a method of the generic Consumer: so that Keeper.Now is
// inlined in it, on every job's path.)
func now(k *lease.Keeper, clk *clock.Anchored) time.Time {
	if t, ok := k.Now(); ok {
		return t
	}
	return clk.Now()
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
