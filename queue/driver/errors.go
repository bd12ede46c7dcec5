package driver

import "errors"

// The errors of backends. Package queue exports the same values under the
// same names (queue.ErrFull is ErrFull), so that a user's errors.Is holds
// whichever name the error was returned or tested under. Their texts start
// with "queue:": they reach the users of package queue.
var (
	// ErrFull is returned by Enqueue under the Reject policy when the
	// queue is at capacity.
	ErrFull = errors.New("queue: full")
	// ErrDropped is returned by Enqueue under the DropNewest policy when
	// the queue is at capacity: the job was not stored.
	ErrDropped = errors.New("queue: dropped (full)")
	// ErrDuplicate is returned by Enqueue when the job's ID is taken (the
	// job is stored, or was enqueued within the dedup horizon). The
	// earlier job stands; nothing was stored.
	ErrDuplicate = errors.New("queue: duplicate job id")
	// ErrNotUnique is returned by Enqueue when another job holds the job's
	// unique key (see Message.Unique): nothing was stored, and the holder's
	// ID is in EnqueueResult.Existing.
	ErrNotUnique = errors.New("queue: unique key held by another job")
	// ErrClosed is returned after the queue or consumer was closed, and by
	// a Backend's Enqueue and Receive once it is closed.
	ErrClosed = errors.New("queue: closed")
	// ErrNotFound is returned by Redrive and Purge for an unknown ID.
	ErrNotFound = errors.New("queue: no such dead letter")
	// ErrLeaseLost is returned by a Backend when a delivery is no longer
	// leased to its receiver (it expired and the job moved on).
	ErrLeaseLost = errors.New("queue: lease lost")
	// ErrLeaseExpired is the cancellation cause of a handler's context when
	// the handler ran past its lease, and the Error of the history entry
	// a backend records for a run whose lease expired unsettled.
	ErrLeaseExpired = errors.New("queue: lease expired")
	// ErrUnavailable is matched (errors.Is) by the error of a backend call
	// that could not reach its broker, or got no answer within the call's
	// deadline: the outcome of the call is unknown. An Enqueue that fails
	// with it may have stored the job: enqueue again with the same ID
	// (queue.WithID); ErrDuplicate then means it was stored. A job whose
	// ack, retry or dead-lettering failed with it is redelivered when its
	// lease ends, unless the call took effect after all.
	ErrUnavailable = errors.New("queue: backend unavailable")
	// ErrEvicted is the Error of the history entry a backend records for
	// a job it evicts under DropOldest (see [ReasonEvicted]), and the Err
	// of the queue's OnDead event for it.
	ErrEvicted = errors.New("queue: evicted by overflow (drop oldest)")
	// ErrCanceled is the cancellation cause of a handler's context when an
	// operator cancelled its job (see [Admin.Cancel]), the error Start and
	// Extend return for the delivery of such a job, and the Error of the
	// history entry of a job cancelled while it waited.
	ErrCanceled = errors.New("queue: job canceled by an operator")
	// ErrNoJob is returned by the verbs of [Admin] that name a job (Get,
	// Cancel) when no stored job and no dead letter has the ID.
	ErrNoJob = errors.New("queue: no such job")
)
