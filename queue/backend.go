package queue

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
)

// Backend stores the jobs of one queue. A [Queue] drives it; users only pick
// one ([NewMemory], or a broker backend such as queue/jetstream) and pass it
// with [WithBackend]. Every Backend must pass queuetest.Run.
//
// Payloads cross the Backend as bytes ([Message.Body], encoded by the queue's
// [Codec]) except for backends in this package that keep values in process.
//
// The life of a job in a Backend: Enqueue stores it (ready, or delayed until
// NotBefore); Receive leases it to one consumer and counts an attempt; the
// consumer then calls exactly one of Ack (done, removed), Nack (failed: ready
// again after a delay), Release (returned unattempted, at shutdown) or Bury
// (moved to the dead letters). A lease that expires before any of those
// makes the job ready again with the attempt spent. While a job with an
// ordering key is leased or delayed, no other job with that key is
// delivered.
//
// Implementations must be safe for concurrent use. Every method may block
// and must return context.Cause(ctx) when ctx ends first.
type Backend interface {
	// Open prepares the backend for a queue with cfg. A Queue calls it once,
	// from New. A backend that cannot keep a promise of cfg (for example a
	// dedup horizon longer than the broker's window) returns an error.
	Open(ctx context.Context, cfg Config) error

	// Enqueue stores m. It returns ErrDuplicate if m.ID is stored or was
	// enqueued within the dedup horizon, and applies cfg.Overflow when the
	// backend holds cfg.Capacity jobs: Block waits for room or ctx, Reject
	// returns ErrFull, DropNewest returns ErrDropped, DropOldest moves the
	// oldest job that is not leased to the dead letters with ReasonOverflow
	// and reports its ID in the result.
	Enqueue(ctx context.Context, m Message) (EnqueueResult, error)

	// Receive waits for a ready job, leases it for lease and fills d.
	// d.Attempt is the number of this delivery (1 for the first). Lease
	// expiry makes the job ready again; Extend pushes it back.
	Receive(ctx context.Context, lease time.Duration, d *Delivery) error

	// Extend renews the lease of d to lease from now (JetStream: InProgress).
	// It returns ErrLeaseLost if d is no longer leased to its receiver.
	Extend(ctx context.Context, d *Delivery, lease time.Duration) error

	// Ack removes the job of d. ErrLeaseLost if d is no longer leased.
	Ack(ctx context.Context, d *Delivery) error

	// Nack makes the job of d ready again after delay, recording the failed
	// attempt a in its history (JetStream: NakWithDelay). The job keeps its
	// ordering key blocked while delayed.
	Nack(ctx context.Context, d *Delivery, delay time.Duration, a Attempt) error

	// Release returns the job of d unattempted and ready at once, used when
	// a consumer shuts down before or while handling it. A backend that
	// cannot un-count a delivery may leave the attempt counted.
	Release(ctx context.Context, d *Delivery) error

	// Bury moves the job of d to the dead letters with reason, recording
	// the final attempt a (JetStream: publish to the dead-letter subject,
	// then Term).
	Bury(ctx context.Context, d *Delivery, reason Reason, a Attempt) error

	// DeadLetters lists the dead letters, oldest first.
	DeadLetters(ctx context.Context) iter.Seq2[DeadMessage, error]

	// An ID has at most one dead letter: burying a job whose ID already has
	// one (a later job that reused the ID) replaces it, so that Redrive and
	// Purge are never ambiguous.

	// Redrive moves the dead letter with id back into the queue as a new,
	// ready job with a fresh attempt count. ErrNotFound if there is none;
	// ErrDuplicate if a job with that ID is stored.
	Redrive(ctx context.Context, id string) error

	// Purge deletes the dead letter with id. ErrNotFound if there is none.
	Purge(ctx context.Context, id string) error

	// Stats returns the backend's gauges.
	Stats(ctx context.Context) (BackendStats, error)
}

// Config is what a Queue asks of its Backend.
type Config struct {
	// Capacity bounds the jobs stored (ready, delayed and leased; dead
	// letters are not counted). Zero means unbounded.
	Capacity int
	// Overflow says what Enqueue does when Capacity is reached.
	Overflow Overflow
	// DedupHorizon is how long after its enqueue an ID stays taken after
	// the job left the queue. While a job is stored its ID is always taken.
	DedupHorizon time.Duration
}

// Validate reports the first field of c that no queue can honour: a
// negative Capacity or DedupHorizon, or an Overflow that is not one of the
// policies. New validates its Config, so a Backend's Open sees only valid
// ones from a Queue; a Backend validates again when called directly.
func (c Config) Validate() error {
	switch {
	case c.Capacity < 0:
		return fmt.Errorf("queue: negative capacity %d", c.Capacity)
	case c.DedupHorizon < 0:
		return fmt.Errorf("queue: negative dedup horizon %v", c.DedupHorizon)
	case c.Overflow < Block || c.Overflow > DropOldest:
		return fmt.Errorf("queue: unknown overflow policy %d", int(c.Overflow))
	}
	return nil
}

// Overflow is what Enqueue does when the queue is at capacity.
type Overflow int

// The overflow policies.
const (
	// Block waits for room, until the Enqueue ctx ends.
	Block Overflow = iota
	// Reject fails the Enqueue with ErrFull.
	Reject
	// DropNewest refuses the incoming job: Enqueue returns ErrDropped and
	// the job is counted as dropped.
	DropNewest
	// DropOldest accepts the incoming job and evicts the oldest stored job
	// that is not being handled to the dead letters with ReasonOverflow.
	DropOldest
)

// String returns the policy's name.
func (o Overflow) String() string {
	switch o {
	case Block:
		return "block"
	case Reject:
		return "reject"
	case DropNewest:
		return "drop-newest"
	case DropOldest:
		return "drop-oldest"
	}
	return "overflow(invalid)"
}

// Message is a job as a Backend stores it.
type Message struct {
	ID  string
	Key string
	// Body is the encoded payload.
	Body []byte
	// Value is the payload value; only set for in-process backends of this
	// package, nil otherwise.
	Value      any
	EnqueuedAt time.Time
	NotBefore  time.Time
	StartBy    time.Time
	// Attempt is the number of this delivery, set by Receive.
	Attempt int

	fresh bool // the queue generated ID for this enqueue: no job has it yet
}

// Delivery is a leased Message. Token and Seq belong to the backend: it sets
// them in Receive to find the job again and to detect stale deliveries.
type Delivery struct {
	Message
	Token any
	Seq   uint64
	// Redelivered, set by Receive, says the job was delivered before, even
	// if Release gave that delivery back uncounted (so Attempt may be 1).
	// The consumer checks a job's start-by deadline only on a delivery with
	// Attempt 1 and Redelivered false: a job that was started in time does
	// not expire.
	Redelivered bool

	at time.Time // when the in-memory backend leased it (see worker.handle)
}

// DeadMessage is a dead letter as a Backend stores it.
type DeadMessage struct {
	Message
	Reason  Reason
	History []Attempt
	At      time.Time
}

// EnqueueResult reports side effects of a successful Enqueue.
type EnqueueResult struct {
	// Evicted lists the IDs moved to the dead letters by DropOldest.
	Evicted []string
}

// BackendStats are a backend's gauges at one instant.
type BackendStats struct {
	// Ready counts jobs waiting to be delivered now (including jobs queued
	// behind a busy ordering key).
	Ready int
	// InFlight counts leased jobs.
	InFlight int
	// Delayed counts jobs waiting for their NotBefore or retry delay,
	// including jobs queued behind a busy ordering key whose NotBefore has
	// not come.
	Delayed int
	// Dead counts dead letters.
	Dead int
	// Oldest is the enqueue time of the oldest stored job (zero if none).
	Oldest time.Time
}

// Errors returned by queues and backends.
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
	// ErrClosed is returned after the queue or consumer was closed.
	ErrClosed = errors.New("queue: closed")
	// ErrNotFound is returned by Redrive and Purge for an unknown ID.
	ErrNotFound = errors.New("queue: no such dead letter")
	// ErrLeaseLost is returned by a Backend when a delivery is no longer
	// leased to its receiver (it expired and the job moved on).
	ErrLeaseLost = errors.New("queue: lease lost")
	// ErrLeaseExpired is the cancellation cause of a handler's context when
	// the handler ran past its lease.
	ErrLeaseExpired = errors.New("queue: lease expired")
)

// Codec encodes payloads for backends that store bytes. A Codec must be
// safe for concurrent use.
type Codec[T any] interface {
	Marshal(v T) ([]byte, error)
	Unmarshal(data []byte) (T, error)
}
