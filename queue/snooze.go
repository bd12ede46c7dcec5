package queue

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrSnoozed is matched (errors.Is) by the error [Snooze] returns, and so by
// the Err of the OnRetry event of a snoozed job.
var ErrSnoozed = errors.New("queue: snoozed")

// snoozeError is the error of Snooze: its handler's job goes back for
// delay, without spending an attempt.
type snoozeError struct{ delay time.Duration }

func (e *snoozeError) Error() string { return "queue: snoozed for " + e.delay.String() }

func (e *snoozeError) Is(target error) bool { return target == ErrSnoozed }

// Snooze returns an error with which a handler puts its job back, to be
// delivered again after d, without spending an attempt: for a job that
// waits for a state outside it (a payment settling, a file arriving). A
// handler returns it, or an error wrapping it (errors.As finds it). A d of
// zero or less makes the job ready again at once.
//
// The snooze is recorded in the job's history, as an [Attempt] with
// Snoozed set and the Number of the run after it; the OnRetry hook is
// called, with an Err matching [ErrSnoozed] and Delay d; Stats.Snoozed counts
// it. A job snoozed more than the consumer's maximum ([WithMaxSnoozes]) is
// dead-lettered with [ReasonSnoozes] instead, its attempt spent. A handler
// whose lease ended (its context cancelled with ErrLeaseExpired) has lost
// its job: its Snooze counts as a failed attempt, like any error.
func Snooze(d time.Duration) error { return &snoozeError{delay: max(d, 0)} }

// snoozed reports the delay of the Snooze error in err, if there is one.
func snoozed(err error) (time.Duration, bool) {
	var s *snoozeError
	if errors.As(err, &s) {
		return s.delay, true
	}
	return 0, false
}

// defaultMaxSnoozes is the default of WithMaxSnoozes.
const defaultMaxSnoozes = 100

// WithMaxSnoozes sets how many times a job may be snoozed ([Snooze]): the
// next snooze dead-letters it with [ReasonSnoozes], so that a job waiting
// for a state that never comes does not wait forever. The count is the
// job's, kept by the backend across processes and deliveries (a redriven
// job starts again from 0). The default is 100; 0 forbids snoozing (a
// snooze dead-letters the job). It panics if n < 0.
func WithMaxSnoozes(n int) ConsumerOption {
	if n < 0 {
		panic("queue: WithMaxSnoozes(" + strconv.Itoa(n) + "): need at least 0")
	}
	return consumerOptionFunc(func(o *consumerOptions) { o.maxSnoozes = n })
}

// snooze decides how to settle the job in w.d, whose handler snoozed it
// for delay with herr, and fills in a: put back (opSnooze), or dead-lettered
// once it was snoozed as many times as the consumer allows.
func (w *worker[T]) snooze(herr error, delay time.Duration, a *Attempt) (op, time.Duration, Event) {
	if limit := w.c.opts.maxSnoozes; w.d.Snoozes >= limit {
		err := fmt.Errorf("queue: snoozed %d times, max snoozes %d: %w", w.d.Snoozes, limit, herr)
		a.Error = err.Error()
		return opBury, 0, Event{Reason: ReasonSnoozes, Err: err}
	}
	a.Error, a.Snoozed = herr.Error(), true
	return opSnooze, delay, Event{Err: herr, Delay: delay}
}
