// Package redelivery computes the delay before a failed job is delivered
// again: the consumer's backoff schedule, and a hint the handler attached to
// its error (retry.After), within the rules of retry.Policy.Next.
//
// The contract: a [Delays] is made once per consumer and read by its
// workers at once; it keeps no state between calls, because a backend does
// not keep a job's previous delay: [Delays.After] replays the schedule's
// sequence to the attempt instead, so that each delay follows the
// distribution an in-process retry loop would draw from.
package redelivery

import (
	"errors"
	"math"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
)

// Delays are the redelivery delays of a schedule.
type Delays struct {
	schedule backoff.Schedule
	policy   *retry.Policy // the schedule's backoff and hint rules
}

// New returns the Delays of s. A hint is clamped to s's cap or one minute
// (retry's default MaxHint), whichever is longer.
func New(s backoff.Schedule) *Delays {
	// The consumer counts attempts itself: retry's limit is out of reach.
	ro := []retry.Option{retry.WithBackoff(s), retry.WithMaxAttempts(math.MaxInt)}
	if s.Cap() > time.Minute { // else retry's default MaxHint, one minute
		ro = append(ro, retry.WithMaxHint(s.Cap()))
	}
	return &Delays{schedule: s, policy: retry.New(ro...)}
}

// errRetry stands for a handler's error in retry.Policy.Next, so that only
// Next's hint and backoff rules apply: the consumer has classified the
// handler's error itself (permanent, last attempt) before asking.
var errRetry = errors.New("queue: retry")

// After returns the redelivery delay after failed attempt n (from 1),
// whose error was err: that of retry n-1 of the schedule, or err's hint.
func (d *Delays) After(n int, err error) time.Duration {
	// Replay the sequence to retry n-1 (n is at most the consumer's max
	// attempts; a schedule other than decorrelated jitter ignores prev).
	var prev time.Duration
	seq := d.schedule.Sequence()
	for range n - 1 {
		prev = seq.Next()
	}
	e := errRetry
	if h, ok := retry.Hint(err); ok {
		e = retry.After(errRetry, h)
	}
	delay, _ := d.policy.Next(n, prev, e) // never gives up: see New
	return delay
}
