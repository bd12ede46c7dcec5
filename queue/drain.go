package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Drain works off the backlog, then closes the consumer as [Consumer.Close]
// does, and returns what it did with the jobs it handled from its call on
// (see [Report]).
//
// The backlog is every job the backend stores: ready ones, including those
// queued behind a busy ordering key; delayed ones, whose [WithDelay] or
// [WithNotBefore] time or retry backoff has not come yet, which Drain
// handles once they are due; and jobs in flight, whose handlers Drain waits
// for (a retry they schedule is backlog too). Drain takes jobs as the
// consumer always does (ordering keys, leases, attempts and hooks as
// usual).
//
// Drain stops the first time it finds the backend storing no job (Stats:
// Ready, Delayed and InFlight all zero), or when ctx ends. It does not wait
// for producers: a job enqueued before that moment is backlog, which Drain
// waits for; a job enqueued after it stays stored. So stop the producers
// first. A producer slower than the workers lets the backlog empty between
// its jobs, and Drain returns at the first such gap; one that never lets it
// empty keeps Drain going until ctx ends.
//
// Drain returns nil once the backlog is empty and the consumer closed. If
// ctx ends first, Drain closes the consumer with that ended ctx, as Close
// does when its ctx ends (the running handlers are cancelled, their jobs
// returned), and returns the report and context.Cause(ctx) (joined with the
// backend's last error, if its Stats kept failing). What is left stays
// stored: with the in-memory backend
// ([github.com/corral-go/corral/queue/memory.Backend]), it is lost when the
// process exits, so Drain's
// error says that jobs were lost; a broker backend keeps them for the next
// consumer. If the consumer stops taking jobs by itself (the ctx given to
// Consume ended, or a backend method panicked), Drain stops waiting and
// closes it at once.
//
// The backlog is the backend's, not this consumer's: with a backend that
// other consumers share (another Consumer of the queue, or other processes
// on a broker), Drain also waits for the jobs they hold, and for those
// their producers add, and for the jobs of a payload version this consumer
// does not understand, which it hands back for a consumer that does (see
// [WithVersion]) until they are handled or dead-lettered. With a broker
// backend, which keeps every stored job across processes, Close is usually
// enough.
//
// Drain, like Close, must not be called from a handler of the same
// consumer, and returns ErrClosed if the consumer was already drained or
// closed. A Close called while Drain runs waits for it, then returns
// ErrClosed. Panics surface as they do in Close.
func (c *Consumer[T]) Drain(ctx context.Context) (Report, error) {
	if !c.beginClose() {
		return Report{}, ErrClosed
	}
	defer func() { <-c.closing }()
	err := c.workOff(ctx)
	r, cerr := c.closeLocked(ctx)
	if err == nil {
		err = cerr
	}
	return r, err
}

// drainPoll is how often Drain looks at the backlog when no worker of its
// own tells it to: the jobs left may be another consumer's, or due later.
const drainPoll = 50 * time.Millisecond

// workOff waits until the backend stores no job, or ctx ends, or the
// consumer stops taking jobs by itself. It looks at the backend's stats
// each time a worker is about to wait for a job (see serve), and every
// drainPoll.
func (c *Consumer[T]) workOff(ctx context.Context) error {
	c.draining.Store(true)
	defer c.draining.Store(false)
	t := time.NewTimer(drainPoll)
	defer t.Stop()
	var lastErr error
	for {
		s, err := c.q.backend.Stats(ctx)
		c.observe(ctx, err)
		c.noteLosses(ctx)
		switch {
		case err == nil && s.Ready+s.Delayed+s.InFlight == 0:
			return nil
		case err == nil:
			lastErr = nil
		case ctx.Err() == nil:
			lastErr = err // the workers retry the backend too: keep looking
		}
		if c.recv.Err() != nil {
			return fmt.Errorf("queue: drain: the consumer stopped taking jobs: %w", context.Cause(c.recv))
		}
		select {
		case <-c.idle:
		case <-t.C:
			t.Reset(drainPoll)
		case <-c.recv.Done():
		case <-ctx.Done():
			if lastErr != nil {
				return errors.Join(context.Cause(ctx), lastErr)
			}
			return context.Cause(ctx)
		}
	}
}
