package queue

import (
	"fmt"
	"strconv"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/driver"
)

type rateLimit struct {
	n   int
	per time.Duration
}

// WithRateLimit limits the consumer to at most n job starts per interval per
// for the whole queue: the starts of every consumer of the queue, in every
// process, that has the same limit count against one window, which the
// backend keeps (driver.RateLimiter; Consume returns an error for a backend
// that keeps none). The window slides: no span of per holds more than n
// starts, up to the accuracy the backend states (the in-memory backend's is
// exact, being one process's).
//
// A worker asks for a start with a job in hand, its lease renewed while it
// waits, and with a [Share] before it takes a slot: a consumer held back by
// its rate holds no slot of the Share, and the other consumers take the
// turns it cannot use. A job that waits for a start spends no attempt. It
// panics if n < 1 or per <= 0.
func WithRateLimit(n int, per time.Duration) ConsumerOption {
	if n < 1 || per <= 0 {
		panic("queue: WithRateLimit(" + strconv.Itoa(n) + ", " + per.String() + "): need at least 1 start per positive interval")
	}
	return consumerOptionFunc(func(o *consumerOptions) { o.rate = rateLimit{n: n, per: per} })
}

// rateLimiter returns the backend's limiter for a consumer with options o,
// nil if o sets no rate limit, or the error of a backend that keeps none.
func (q *Queue[T]) rateLimiter(o *consumerOptions) (driver.RateLimiter, error) {
	if o.rate.n == 0 {
		return nil, nil
	}
	rl, ok := q.backend.(driver.RateLimiter)
	if !ok {
		return nil, fmt.Errorf("queue: WithRateLimit: the backend %T keeps no rate limit (driver.RateLimiter)", q.backend)
	}
	return rl, nil
}

// takeStart waits, for the job in w.d, until the consumer's rate limit
// gives it a start, renewing the job's lease meanwhile, and reports true;
// or reports false if intake stopped (the job was given back) or the lease
// was lost (dropped).
func (w *worker[T]) takeStart() bool {
	errDelays := receiveBackoff.Sequence()
	for {
		ok, wait := w.tryStart(&errDelays)
		if ok {
			return true
		}
		if !w.waitStart(wait) {
			return false
		}
	}
}

// tryStart asks the backend for a start once, and reports whether it got
// one, else how long to wait before asking again. A backend that fails to
// answer is asked again after the next of errDelays: the job waits, it does
// not start unlimited.
func (w *worker[T]) tryStart(errDelays *backoff.Sequence) (bool, time.Duration) {
	c := w.c
	ok, wait, err := c.rate.TakeStart(c.bg, c.opts.rate.n, c.opts.rate.per)
	if err != nil {
		c.observe(c.bg, err)
		if c.bg.Err() == nil {
			c.q.c.BackendErrors.Add(1)
		}
		return false, errDelays.Next()
	}
	return ok, wait
}

// waitStart waits for wait with the job in w.d in hand, renewing its lease
// at the consumer's renewal interval, and reports true; or false if intake
// stopped (the job is given back) or the lease was lost (dropped).
func (w *worker[T]) waitStart(wait time.Duration) bool {
	c := w.c
	for wait > 0 {
		step := min(wait, c.renewEvery())
		t := time.NewTimer(step)
		select {
		case <-t.C:
		case <-c.recv.Done():
			t.Stop()
			w.settle(c.base, c.counting.Load(), opRelease, 0, &Attempt{}, &Event{})
			return false
		}
		wait -= step
		if step == c.renewEvery() && !w.renewWaiting() {
			w.dropLost()
			return false
		}
	}
	return true
}
