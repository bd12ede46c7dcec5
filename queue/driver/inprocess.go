package driver

import (
	"context"
	"time"
)

// InProcess is implemented by a Backend that lives in the queue's process
// (memory.Backend) and so can do some things faster than the Backend
// interface lets it. queue.New looks for it once, as database/sql looks for
// driver.NamedValueChecker, and then uses its methods where they apply and
// the Backend methods elsewhere. Every other rule of Backend holds as it is:
// in particular, a job taken by ReceiveAt or AckNext is leased for the lease
// given, as Receive leases it (AckNext from the caller's reading of the
// clock, so never longer), and comes back when that lease ends unless
// Extend renews it.
//
// An InProcess backend keeps payload values: the queue gives it the payload
// in [Message.Value] and no Body, runs no codec, and expects the value back
// unchanged from Receive and DeadLetters.
//
// Its calls answer at once (they wait only where Receive, and Enqueue under
// Block, wait for a job or for room), and a call that returns nil has had
// its effect: the queue does not report their successes to its Health.
//
// A type that embeds an InProcess backend gets its methods promoted, and
// may override the Backend methods they stand for (Enqueue, Receive, Ack):
// Self tells the queue so. The queue uses the InProcess methods only of a
// backend whose Self is the backend itself; with any other, it calls the
// Backend methods alone, so that a wrapper's overrides are never bypassed.
// (A wrapper that embeds the Backend interface rather than the concrete
// type hides the InProcess methods and is an ordinary Backend.)
type InProcess interface {
	Backend

	// Self returns the backend whose methods these are: the receiver
	// itself, a pointer (see above).
	Self() Backend

	// EnqueueFresh is Enqueue for a job whose ID the queue generated for it
	// (Message.ID): no stored job has that ID, so a backend may skip looking
	// for a duplicate. It must still remember the ID for the dedup horizon,
	// and a later Enqueue that gives the same ID explicitly must fail with
	// ErrDuplicate while the job is stored. The IDs a queue generates are 32
	// bytes long, and all of one queue's share their first 16: a backend may
	// rely on this to find such a job among those EnqueueFresh stored.
	EnqueueFresh(ctx context.Context, m Message) (EnqueueResult, error)

	// ReceiveAt is Receive, and returns the backend's reading of the clock
	// at which the lease it took starts, for the consumer to date the
	// handler run without reading the clock again.
	ReceiveAt(ctx context.Context, lease time.Duration, d *Delivery) (time.Time, error)

	// AckNext is Ack of d followed, in one step, by a Receive that does
	// not wait: if a job is ready, it is leased into d as Receive leases
	// it, and AckNext reports true; if none is, it reports false and d is
	// left as it was. If the Ack fails (ErrLeaseLost), nothing is received.
	//
	// now is the caller's recent reading of the clock (time.Now, or a
	// reading it took earlier; a zero now asks the backend to read the
	// clock itself). The lease taken starts at now and ends at now + lease:
	// never later than the lease a Receive called at the same moment would
	// take, and shorter than it by at most the age of now. A backend may
	// take now as the current time for the rest of the call as well (a
	// delayed job due or a lease expired by now, not by the clock).
	AckNext(ctx context.Context, d *Delivery, now time.Time, lease time.Duration) (next bool, err error)
}
