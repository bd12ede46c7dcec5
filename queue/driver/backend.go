package driver

import (
	"context"
	"iter"
	"time"
)

// Backend stores the jobs of one queue. A queue.Queue drives it; users only
// pick one (memory.New, or a broker backend such as queue/jetstream) and
// pass it with queue.WithBackend. Every Backend must pass queuetest.Run.
//
// Payloads cross the Backend as bytes ([Message.Body], encoded by the queue's
// codec), except for a backend that implements [InProcess], which gets the
// payload values themselves ([Message.Value]).
//
// The life of a backend: queue.New opens it (Open), the queue's producers
// and consumers use it, and the queue's Close closes it (Close).
//
// The life of a job in a Backend: Enqueue stores it (ready, or delayed until
// NotBefore); Receive leases it to one consumer; Start, called as its handler
// starts, spends an attempt; the consumer then calls exactly one of Ack
// (done, removed), Nack (failed: ready again after a delay), Release
// (returned, at shutdown) or Bury (moved to the dead letters). A lease that
// expires before any of those makes the job ready again, with the attempt
// spent if Start was called and not otherwise. While a job with an ordering
// key is leased or delayed, no other job with that key is delivered.
//
// Attempts are handler runs: a job's attempt count is the number of Start
// calls that succeeded on its deliveries. A delivery that never reached a
// handler (released at shutdown, prefetched by a process that died,
// dead-lettered because its payload could not be decoded or its start-by
// deadline passed) spends none.
//
// A job's history has one entry per handler run, numbered 1 to n in order
// (a run that snoozed the job spent no attempt: its entry, marked
// Snoozed, has the Number of the run after it): Nack and Bury record the
// run's Attempt the consumer gives them, and a run
// that ended without a settle (its lease expired: its process died, or its
// handler overran) gets its entry from the backend when the backend takes
// the job back, with Number that run's attempt, Start the run's start (or
// the lease's, if the backend does not know it), End when the backend took
// the job back, and Error the text of [ErrLeaseExpired]. A dead letter's
// Attempt is the number of runs its job had.
//
// Implementations must be safe for concurrent use. Every method may block
// and must return context.Cause(ctx) when ctx ends first. A backend that
// talks to a broker bounds every request with a deadline of its own, and
// returns an error matching [ErrUnavailable] when the broker cannot be
// reached or does not answer in time: the outcome of the call is then
// unknown (Enqueue may have stored the job; a settling call may or may not
// have settled it, and the job is redelivered when its lease ends if not).
// A call abandoned because its caller's ctx ended matches both
// context.Cause(ctx) and [ErrUnavailable]; [Call] states the whole rule and
// applies it.
type Backend interface {
	// Open prepares the backend for a queue with cfg. A Queue calls it once,
	// from New, with New's ctx. A backend that cannot keep a promise of cfg
	// (for example a dedup horizon longer than the broker's window) returns
	// an error.
	Open(ctx context.Context, cfg Config) error

	// Enqueue stores m. It returns ErrDuplicate if m.ID is stored or was
	// enqueued within the dedup horizon, ErrNotUnique (with the holder in
	// the result) if another job holds m.Unique (see Message.Unique), and
	// applies cfg.Overflow when the
	// backend holds cfg.Capacity jobs: Block waits for room or ctx, Reject
	// returns ErrFull, DropNewest returns ErrDropped, DropOldest moves the
	// oldest job that is not leased to the dead letters with ReasonEvicted
	// and reports its ID in the result.
	Enqueue(ctx context.Context, m Message) (EnqueueResult, error)

	// Receive waits for a ready job, leases it for lease and fills d.
	// d.Attempt is the attempt a handler started on d makes: one more than
	// the handler runs the job had (1 for a job never started). Lease
	// expiry makes the job ready again; Extend pushes it back. Taking back
	// a job whose started run's lease expired records that run in the
	// job's history, as an attempt that failed with the text of
	// [ErrLeaseExpired] (see Backend). When ctx is cancelled, Receive
	// returns context.Cause(ctx) once nothing is leased for the caller: a
	// job taken for it meanwhile is given back first, its attempt unspent
	// (see [Call.UntilDeadline]), unless the broker cannot be reached to
	// take it back, or the caller gives up waiting (the abandon context of
	// [WithAbandon] ends); then, as with a call in flight at ctx's deadline,
	// which may be abandoned, the job comes back when its lease ends.
	Receive(ctx context.Context, lease time.Duration, d *Delivery) error

	// Start records that a handler starts on d, spending the attempt
	// d.Attempt: the consumer calls it just before the handler and runs the
	// handler only if it returns nil. ErrLeaseLost if d is no longer leased,
	// or (a broker backend after a crash) if another delivery of the same
	// job may still be running, or if the backend finds that settling d
	// could settle another job (a broker that numbered it wrongly; d comes
	// back when its lease ends). A Start that fails with ErrUnavailable may
	// still have been recorded: that attempt then counts without a run.
	Start(ctx context.Context, d *Delivery) error

	// Extend renews the lease of d to lease from now (JetStream: InProgress).
	// It returns ErrLeaseLost if d is no longer leased to its receiver.
	Extend(ctx context.Context, d *Delivery, lease time.Duration) error

	// Ack removes the job of d. ErrLeaseLost if d is no longer leased.
	Ack(ctx context.Context, d *Delivery) error

	// Nack makes the job of d ready again after delay, recording the failed
	// attempt a in its history (JetStream: NakWithDelay). The job keeps its
	// ordering key blocked while delayed.
	//
	// A Nack whose a has Snoozed set is a snooze (queue.Snooze): the run
	// spends no attempt (as after Release, the attempt Start counted on d
	// is given back), a is recorded in the history all the same, and the
	// job's snooze count, which Receive returns in Message.Snoozes, grows
	// by one.
	Nack(ctx context.Context, d *Delivery, delay time.Duration, a Attempt) error

	// Release returns the job of d, ready again after delay (at once if
	// delay is zero or less). A consumer releases a job when it shuts down
	// before or while handling it (delay 0), and a job whose payload
	// version it does not understand, for another consumer to take (see
	// queue.WithVersion). A released delivery spends no attempt, even if Start
	// was called on it: its handler was cancelled by the shutdown, not
	// failed. As after Nack, the job keeps its ordering key blocked while
	// delayed.
	Release(ctx context.Context, d *Delivery, delay time.Duration) error

	// Bury moves the job of d to the dead letters with reason, recording
	// the final attempt a in its history (JetStream: publish to the
	// dead-letter subject, then Term). An a with Number 0 is a burial
	// without a run on d: an a whose Number is 0 and Error "" records no
	// entry (the consumer buries so a job delivered with every attempt
	// spent), and one with an Error records that entry, with Number 0. The
	// dead letter's Attempt is the handler runs the job had: d.Attempt if
	// Start succeeded on d, d.Attempt-1 if not (for a delivery of
	// [ReceiveStarter.ReceiveStart], if a has Number 0). When the dead letters are
	// at cfg.DeadLetterLimit, the oldest are deleted to make room and
	// their IDs reported in the result. ErrLeaseLost if d is no longer
	// leased, or, as for Start, if burying d could settle another job.
	Bury(ctx context.Context, d *Delivery, reason Reason, a Attempt) (BuryResult, error)

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
	Stats(ctx context.Context) (Stats, error)

	// Close releases what the backend holds for its queue: the broker
	// subscriptions, and the jobs prefetched but not handed to a consumer
	// (they go back to the broker). It deletes nothing: what the backend
	// stores stays stored, as the backend keeps it. Once Close was called,
	// Enqueue and Receive fail with ErrClosed, and an Enqueue or Receive
	// waiting when Close is called returns ErrClosed; other methods may
	// too. The queue's Close calls it once its consumers are closed. Close is
	// idempotent: later calls return nil. It returns context.Cause(ctx)
	// if ctx ends before the backend let go of everything (what it held
	// then comes back to the queue when its lease ends).
	Close(ctx context.Context) error
}

// Message is a job as a Backend stores it.
type Message struct {
	// ID is the job's ID (see queue.Job), unique among the stored jobs:
	// given by the producer, or generated by the queue (see [InProcess]).
	ID string
	// Key is the job's ordering key, "" for none (see queue.Job).
	Key string
	// Version is the version of the payload's schema, as the enqueuing
	// queue declared it (queue.WithVersion; 0 if it declared none). A backend
	// stores it with the job and returns it unchanged from Receive and
	// DeadLetters, and Redrive keeps it.
	Version int
	// Headers is the job's metadata, set at enqueue (queue.WithHeaders),
	// nil for none: at most 64 string pairs whose keys obey the rule of an
	// ID and whose values are valid UTF-8 without a NUL byte, checked by the
	// queue before Enqueue. A backend stores them with the job and returns
	// them unchanged, every key and value byte for byte, from Receive on
	// every delivery (retries and releases included) and from DeadLetters;
	// Redrive keeps them. A backend may return an empty map as nil. The
	// map belongs to the backend once given to Enqueue, and to the caller
	// once returned: neither changes it after.
	Headers map[string]string
	// Body is the encoded payload, nil for an [InProcess] backend.
	Body []byte
	// Value is the payload value, set only for an [InProcess] backend (nil
	// for every other): such a backend stores it as it is and hands it
	// back unchanged.
	Value any
	// EnqueuedAt is when the queue accepted the job; a backend given a zero
	// one sets it to the time of its Enqueue.
	EnqueuedAt time.Time
	// NotBefore is the earliest time the job may be delivered (zero: at
	// once).
	NotBefore time.Time
	// StartBy is the job's start-by deadline (zero: none), which the
	// consumer checks (see [Delivery.Redelivered]).
	StartBy time.Time
	// Attempt is the attempt a handler started on this delivery makes (see
	// Backend.Receive), set by Receive.
	Attempt int
	// Unique is the job's unique key, "" for none (queue.WithUnique). A
	// key is held by its job while the job is stored, and for UniqueFor
	// after it left (acked, dead-lettered or evicted): Enqueue refuses a
	// job whose key another job holds with ErrNotUnique, and that job's ID
	// in EnqueueResult.Existing. Redrive stores the job without it. The
	// ID's dedup (ErrDuplicate) is checked first; a key held by a job of
	// the same ID is a duplicate.
	Unique string
	// UniqueFor is how long the job's Unique stays held once the job left.
	UniqueFor time.Duration
	// Snoozes is the number of times the job was snoozed (see Backend.Nack),
	// set by Receive: the consumer dead-letters a job snoozed once more
	// than its maximum. Redrive starts it again from 0.
	Snoozes int
}

// Delivery is a leased Message. Token and Seq belong to the backend: it sets
// them in Receive to find the job again and to detect stale deliveries.
type Delivery struct {
	Message
	// Token is the backend's handle on the leased job, opaque to others.
	Token any
	// Seq is the backend's number of this lease (a generation, or a
	// stream sequence), with which it tells a stale delivery from the
	// current one.
	Seq uint64
	// Redelivered, set by Receive, says the job was delivered before, even
	// if Release gave that delivery back uncounted (so Attempt may be 1).
	// The consumer checks a job's start-by deadline only on a delivery with
	// Attempt 1 and Redelivered false: a job that was started in time does
	// not expire.
	Redelivered bool
}

// DeadMessage is a dead letter as a Backend stores it. Its Message.Attempt
// is the number of handler runs the job had (see Backend.Bury).
type DeadMessage struct {
	Message
	// Reason says why the job was dead-lettered.
	Reason Reason
	// History lists the job's attempts, oldest first: one entry per
	// handler run, numbered 1 to Attempt (a run whose lease expired has
	// the text of ErrLeaseExpired as its Error), then, for a job buried
	// without a run for another reason than ReasonAttempts, one entry
	// with Number 0 that says why.
	History []Attempt
	// At is when the job was dead-lettered.
	At time.Time
}

// EnqueueResult reports side effects of a successful Enqueue.
type EnqueueResult struct {
	// Existing is the ID of the job holding the unique key of a job that
	// Enqueue refused with ErrNotUnique.
	Existing string
	// Evicted lists the IDs moved to the dead letters by DropOldest.
	Evicted []string
	// DeadEvicted lists the IDs of dead letters deleted to keep the dead
	// letters within Config.DeadLetterLimit as Evicted's arrived.
	DeadEvicted []string
}

// BuryResult reports side effects of a successful Bury.
type BuryResult struct {
	// DeadEvicted lists the IDs of the dead letters deleted, oldest first,
	// to keep the dead letters within Config.DeadLetterLimit.
	DeadEvicted []string
}

// SharedLease is implemented by a Backend whose lease is one setting of the
// queue, shared by every consumer in every process (JetStream's AckWait),
// rather than a property of each delivery. The queue's Consume calls CheckLease
// with the lease it will ask of Receive before it starts a worker:
// CheckLease records the lease if the queue has none yet, and returns an
// error naming the setting and both values if the queue's differs, so that
// no consumer changes another's lease.
type SharedLease interface {
	// CheckLease records lease as the queue's if it has none, and fails
	// with an error naming both values if the queue's lease is another.
	CheckLease(ctx context.Context, lease time.Duration) error
}

// Reconnecter is implemented by a Backend that keeps a connection to a
// broker; the queue's Health reports its count. Reconnects is called from
// any goroutine (Health, the OnHealth hook) and must return at once,
// without a call to the broker.
type Reconnecter interface {
	// Reconnects returns how many times the connection was re-established
	// since the backend was created.
	Reconnects() uint64
}

// LossCounter is implemented by a Backend that can tell when its broker
// lost what it stored for the queue (a server restarted without
// persistence, a replica promoted before it had the queue's data); the
// queue's Health reports its count, and the queue calls its OnHealth hook
// when a consumer's Receive or a Stats finds the count grown. Losses is
// called from any goroutine (Health, the OnHealth hook, the consumers) and
// must return at once, without a call to the broker.
type LossCounter interface {
	// Losses returns how many times since the backend was created it found
	// that the broker had lost what it stored for the queue (its jobs, if it
	// had any, dead letters and leases), and set the queue up on the broker
	// again. What was lost stays lost. Calls that find the loss at the same
	// moment may each count it, so one loss counts once or more; a backend
	// of another process that finds the queue set up again counts none.
	Losses() uint64
}

// Stats are a backend's gauges at one instant.
type Stats struct {
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
	// Paused says the queue is paused (see [Admin.SetPaused]); always
	// false for a backend that does not implement Admin.
	Paused bool
}

// RateLimiter is implemented by a Backend that keeps a queue's rate limit
// (queue.WithRateLimit): at most n job starts per interval per, counted for
// the queue in every process that consumes it with that limit. A consumer
// calls TakeStart with a job in hand, before its handler starts: ok says a
// start was free and is now taken; else wait is how long until one may be
// (a consumer asks again then, or sooner). The window slides: a start taken
// at t counts against the starts in (t-per, t]. Each backend states how
// exact its count is across processes.
type RateLimiter interface {
	TakeStart(ctx context.Context, n int, per time.Duration) (ok bool, wait time.Duration, err error)
}

// ReceiveStarter is implemented by a Backend that can record the start of a
// delivery's handler (Start) in the step that receives it, saving a round
// trip per job. A consumer with nothing to wait for between taking a job
// and starting its handler (no rate limit, no Share) calls ReceiveStart in
// place of Receive, and then never Start: the delivery it fills is started,
// its attempt d.Attempt spent, as if Start had succeeded on it.
//
// A consumer that then does not run the handler (a payload that does not
// decode, no attempt left, a start-by deadline passed, a payload version it
// does not understand, Close) settles the delivery as one never started:
// with Release, which gives the attempt back as always, or with Bury and an
// Attempt of Number 0 (no run on d), after which the dead letter's Attempt
// is d.Attempt-1. Attempts stay handler runs, but for a consumer that dies
// between ReceiveStart and its handler: its attempt counts as a run whose
// lease expired, as one that dies between Start and its handler does.
type ReceiveStarter interface {
	// ReceiveStart is Receive and Start of the delivery it fills, in one
	// step. It returns what Receive returns.
	ReceiveStart(ctx context.Context, lease time.Duration, d *Delivery) error
}
