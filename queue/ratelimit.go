package queue

import (
	"fmt"
	"strconv"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/ratelimit"
)

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
	return consumerOptionFunc(func(o *consumerOptions) { o.rate = ratelimit.Rate{N: n, Per: per} })
}

// rateLimit returns the consumer's Limit for options o, kept by the
// backend's limiter: nil if o sets no rate limit, or the error of a backend
// that keeps none.
func (q *Queue[T]) rateLimit(o *consumerOptions) (*ratelimit.Limit, error) {
	if o.rate.N == 0 {
		return nil, nil
	}
	rl, ok := q.backend.(driver.RateLimiter)
	if !ok {
		return nil, fmt.Errorf("queue: WithRateLimit: the backend %T keeps no rate limit (driver.RateLimiter)", q.backend)
	}
	return ratelimit.New(rl, o.rate), nil
}

// takeStart waits, for the job in w.d, until the consumer's rate limit
// gives it a start, renewing the job's lease meanwhile, and reports true;
// or reports false if intake stopped (the job was given back) or the lease
// was lost (dropped).
func (w *worker[T]) takeStart() bool {
	c := w.c
	errDelays := receiveBackoff.Sequence()
	return w.started(c.rate.Take(c.bg, c.recv.Done(), c.renewEvery(), &errDelays, w))
}

// started reports whether o, the end of a wait for a start, is a start;
// else it gives the job in w.d back if intake stopped, or drops it if its
// lease was lost.
func (w *worker[T]) started(o ratelimit.Outcome) bool {
	switch o {
	case ratelimit.Stopped:
		w.settle(w.c.base, w.c.counting.Load(), opRelease, 0, &Attempt{}, &Event{})
	case ratelimit.Lost:
		w.dropLost()
	}
	return o == ratelimit.Started
}
