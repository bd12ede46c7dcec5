package queue

import "github.com/corral-go/corral/queue/driver"

// Errors returned by queues and backends. They are the values of package
// driver under the same names (ErrFull is driver.ErrFull), so errors.Is
// matches either name.
var (
	// ErrFull is returned by Enqueue under the Reject policy when the
	// queue is at capacity.
	ErrFull = driver.ErrFull
	// ErrDropped is returned by Enqueue under the DropNewest policy when
	// the queue is at capacity: the job was not stored.
	ErrDropped = driver.ErrDropped
	// ErrDuplicate is returned by Enqueue when the job's ID is taken (the
	// job is stored, or was enqueued within the dedup horizon). The
	// earlier job stands; nothing was stored.
	ErrDuplicate = driver.ErrDuplicate
	// ErrNotUnique is returned by Enqueue, with the ID of the job that
	// holds the unique key, when another job holds it (see [WithUnique]).
	// Nothing was stored.
	ErrNotUnique = driver.ErrNotUnique
	// ErrClosed is returned after the queue or consumer was closed.
	ErrClosed = driver.ErrClosed
	// ErrNotFound is returned by Redrive and Purge for an unknown ID.
	ErrNotFound = driver.ErrNotFound
	// ErrLeaseLost is returned by a Backend when a delivery is no longer
	// leased to its receiver (it expired and the job moved on), or when
	// settling it could settle another job (see the backend's docs).
	ErrLeaseLost = driver.ErrLeaseLost
	// ErrLeaseExpired is the cancellation cause of a handler's context when
	// the handler ran past its lease.
	ErrLeaseExpired = driver.ErrLeaseExpired
	// ErrUnavailable is matched (errors.Is) by the error of a backend call
	// that could not reach its broker, or got no answer within the call's
	// deadline: the outcome of the call is unknown. An Enqueue that fails
	// with it may have stored the job: enqueue again with the same ID
	// ([WithID]); ErrDuplicate then means it was stored. A job whose ack,
	// retry or dead-lettering failed with it is redelivered when its lease
	// ends, unless the call took effect after all.
	ErrUnavailable = driver.ErrUnavailable
	// ErrCanceled is the cancellation cause of a handler's context when an
	// operator cancelled its job ([Queue.Cancel]), and the error in the
	// history of a job cancelled before it ran.
	ErrCanceled = driver.ErrCanceled
	// ErrNoJob is returned by [Queue.Inspect] and [Queue.Cancel] when no
	// stored job and no dead letter has the ID.
	ErrNoJob = driver.ErrNoJob
)

// errEvicted is the Err of the OnDead event of a job evicted by DropOldest.
var errEvicted = driver.ErrEvicted
