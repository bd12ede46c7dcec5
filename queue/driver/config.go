package driver

import (
	"fmt"
	"time"

	"github.com/corral-go/corral/internal/overflow"
)

// Config is what a queue asks of its Backend. Its settings are shared by
// every process that opens the same queue on a shared backend: such a
// backend checks them at Open against those the queue was opened with, and
// fails with an error naming the setting and both values instead of
// changing them (no process may weaken another's guarantee).
type Config struct {
	// Capacity bounds the jobs stored (ready, delayed and leased; dead
	// letters are not counted). Zero means unbounded.
	Capacity int
	// Overflow says what Enqueue does when Capacity is reached.
	Overflow Overflow
	// DedupHorizon is how long after its enqueue an ID stays taken after
	// the job left the queue. While a job is stored its ID is always taken.
	DedupHorizon time.Duration
	// DeadLetterLimit bounds the dead letters kept: when a job dies with
	// the limit reached, the oldest dead letter is deleted to make room
	// (and reported: see [BuryResult]). Zero means
	// [DefaultDeadLetterLimit].
	DeadLetterLimit int
}

// DefaultDeadLetterLimit is the dead-letter limit of a Config that sets
// none.
const DefaultDeadLetterLimit = 10_000

// deadLimit returns the dead-letter limit c means.
func (c Config) deadLimit() int {
	if c.DeadLetterLimit == 0 {
		return DefaultDeadLetterLimit
	}
	return c.DeadLetterLimit
}

// WithDefaults returns c with its zero settings that mean a default
// (DeadLetterLimit) replaced by the default, so that two Configs can be
// compared setting by setting.
func (c Config) WithDefaults() Config {
	c.DeadLetterLimit = c.deadLimit()
	return c
}

// Validate reports the first field of c that no queue can honour: a
// negative Capacity, DedupHorizon or DeadLetterLimit, or an Overflow that
// is not one of the policies. queue.New validates its Config, so a
// Backend's Open sees only valid ones from a queue; a Backend validates
// again when called directly.
func (c Config) Validate() error {
	switch {
	case c.Capacity < 0:
		return fmt.Errorf("queue: negative capacity %d", c.Capacity)
	case c.DedupHorizon < 0:
		return fmt.Errorf("queue: negative dedup horizon %v", c.DedupHorizon)
	case c.DeadLetterLimit < 0:
		return fmt.Errorf("queue: negative dead-letter limit %d", c.DeadLetterLimit)
	case c.Overflow < Block || c.Overflow > DropOldest:
		return fmt.Errorf("queue: unknown overflow policy %d", int(c.Overflow))
	}
	return nil
}

// Overflow is what Enqueue does when the queue is at capacity.
type Overflow int

// Refusal is the error of an Enqueue at capacity under a policy that refuses
// the job: ErrFull for Reject, ErrDropped for DropNewest. It is nil for the
// policies that make room instead (Block waits for it, DropOldest evicts a
// job), and for an unknown policy.
func (o Overflow) Refusal() error {
	switch o {
	case Reject:
		return ErrFull
	case DropNewest:
		return ErrDropped
	}
	return nil
}

// Not pool.Overflow, on purpose, though the four shared names are spelt alike: a queue's
// policy is a shared setting that every process of the queue records and compares (by its
// String), so its set of values is part of the backend contract, and pool's fifth,
// CallerRuns, has no meaning for a job that a consumer elsewhere may handle.

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
	// that is not being handled to the dead letters with ReasonEvicted.
	DropOldest
)

// String returns the policy's name.
func (o Overflow) String() string { return overflow.Name(int(o), int(DropOldest)) }
