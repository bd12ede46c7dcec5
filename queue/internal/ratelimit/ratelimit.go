// Package ratelimit takes a consumer's job starts from the backend's rate
// limiter (driver.RateLimiter): a worker with a job in hand asks for a start
// and, while it waits for one, keeps the job's lease renewed.
//
// The contract: a [Limit] is shared by the workers of one consumer, each
// calling [Limit.Take] (or [Limit.Try] and [Wait]) on its own goroutine
// with its own [Holder]. A start the limiter grants is the worker's: no
// start is taken that no job uses, unless the caller gives up the job after
// Take. A failing limiter never lets a job start unlimited: the job waits
// and the limiter is asked again. The Holder's methods are called on the
// caller's goroutine, before Take returns.
package ratelimit

import (
	"context"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/driver"
)

// Rate is at most N starts per interval Per.
type Rate struct {
	N   int
	Per time.Duration
}

// Limit is a Rate kept by a backend's limiter.
type Limit struct {
	limiter driver.RateLimiter
	rate    Rate
}

// New returns the Limit of r kept by limiter.
func New(limiter driver.RateLimiter, r Rate) *Limit { return &Limit{limiter: limiter, rate: r} }

// Holder is a worker holding a job while it waits for a start.
type Holder interface {
	// Renew renews the lease of the held job, and reports false if it was
	// lost.
	Renew() bool
	// Failed reports a failure of the limiter.
	Failed(err error)
}

// Outcome is how a wait for a start ended.
type Outcome uint8

const (
	// Started: the job may start.
	Started Outcome = iota
	// Stopped: stop was closed first; the job is still held, to be given
	// back.
	Stopped
	// Lost: the job's lease was lost while it waited.
	Lost
)

// Take waits until l gives the job h holds a start, renewing its lease
// every renewEvery (see Wait), or until stop is closed or the lease is lost.
// ctx is the context of the limiter's calls. A failing limiter is asked
// again after the next of errDelays.
func (l *Limit) Take(ctx context.Context, stop <-chan struct{}, renewEvery time.Duration, errDelays *backoff.Sequence, h Holder) Outcome {
	for {
		ok, wait := l.Try(ctx, errDelays, h)
		if ok {
			return Started
		}
		if o := Wait(wait, renewEvery, stop, h); o != Started {
			return o
		}
	}
}

// Try asks l's limiter for a start once, and reports whether it got one,
// else how long to wait before asking again: the limiter's wait, or if it
// failed (reported to h), the next of errDelays.
func (l *Limit) Try(ctx context.Context, errDelays *backoff.Sequence, h Holder) (bool, time.Duration) {
	ok, wait, err := l.limiter.TakeStart(ctx, l.rate.N, l.rate.Per)
	if err != nil {
		h.Failed(err)
		return false, errDelays.Next()
	}
	return ok, wait
}

// Wait waits for wait with h's job in hand, renewing its lease after each
// renewEvery of it, and returns Started once waited; or Stopped if stop was
// closed first, or Lost if a renewal found the lease lost.
func Wait(wait, renewEvery time.Duration, stop <-chan struct{}, h Holder) Outcome {
	for wait > 0 {
		step := min(wait, renewEvery)
		t := time.NewTimer(step)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return Stopped
		}
		wait -= step
		if step == renewEvery && !h.Renew() {
			return Lost
		}
	}
	return Started
}
