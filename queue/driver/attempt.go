package driver

import "time"

// Reason says why a job was dead-lettered.
type Reason string

// The reasons a job ends in the dead letters.
const (
	// ReasonAttempts: the last allowed attempt failed (or its lease expired).
	ReasonAttempts Reason = "attempts"
	// ReasonPermanent: the handler returned an error marked permanent
	// (retry.Permanent).
	ReasonPermanent Reason = "permanent"
	// ReasonDecode: the payload could not be decoded at its version (a
	// poison job): the codec or the version's upgrade (queue.WithUpgrade)
	// failed or panicked. The error is in the job's history.
	ReasonDecode Reason = "decode"
	// ReasonVersion: no consumer that understands the job's payload
	// version took it within the version wait (queue.WithVersionWait).
	ReasonVersion Reason = "version"
	// ReasonPanic: the handler panicked or called runtime.Goexit (a poison
	// job). The OnDead event's Err tells them apart: a *queue.PanicError,
	// or an error matching queue.ErrGoexit.
	ReasonPanic Reason = "panic"
	// ReasonEvicted: the job was evicted by the DropOldest overflow policy.
	ReasonEvicted Reason = "evicted"
	// ReasonExpired: the job was not started before its start-by deadline.
	ReasonExpired Reason = "expired"
	// ReasonCanceled: an operator cancelled the job (see [Admin.Cancel]).
	ReasonCanceled Reason = "canceled"
	// ReasonSnoozes: the handler snoozed the job (queue.Snooze) once more
	// than the consumer's maximum (queue.WithMaxSnoozes).
	ReasonSnoozes Reason = "snoozes"
)

// Attempt records one failed attempt of a job, kept in its dead letter:
// a handler run that failed, or whose lease expired, or snoozed the job,
// or the decision to dead-letter a job without running it.
type Attempt struct {
	// Number is the attempt number, 1 for the first: the number of the
	// handler run. It is 0 for the entry of a job dead-lettered without a
	// run on its last delivery (decode, version, expired, evicted).
	Number int
	// Start is when the attempt started. For a job dead-lettered without
	// running (evicted, expired) it is the time of the decision. A run of
	// a job an in-process backend handed to a worker with the ack of its
	// last (InProcess.AckNext) is dated with the consumer's latest reading
	// of the clock, taken at most every 10ms while handlers run (see
	// queue.WithLease): Start is then up to that much early (even before
	// the job's EnqueuedAt), or more when every core of the machine is
	// busy.
	Start time.Time
	// End is when the attempt ended (for a job dead-lettered without
	// running, the time of the decision, as Start).
	End time.Time
	// Error is the text of the error the attempt ended with. A run whose
	// lease expired before it was settled (its process died, or its
	// handler overran the lease) has the text of [ErrLeaseExpired],
	// recorded by the backend when it took the job back: its Start is then
	// the run's start (or its lease's, on a backend that does not know the
	// run's), and its End when the backend took the job back.
	Error string
	// Snoozed says the run snoozed the job (queue.Snooze): it spent no
	// attempt, so the job's next run has the same Number. A backend given
	// such an Attempt by Nack treats it as a snooze (see Backend.Nack).
	Snoozed bool `json:",omitempty"`
}
