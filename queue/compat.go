package queue

import (
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// The names below are for backend authors and moved to package driver (the
// backend contract) and package memory (the in-memory backend). They stay
// here for one round so that code written against them keeps compiling;
// they are deprecated and will be removed before v0.2.0.

// Backend stores the jobs of one queue.
//
// Deprecated: use driver.Backend.
type Backend = driver.Backend

// Config is what a Queue asks of its Backend.
//
// Deprecated: use driver.Config.
type Config = driver.Config

// DefaultDeadLetterLimit is the dead-letter limit of a Config that sets
// none.
//
// Deprecated: use driver.DefaultDeadLetterLimit.
const DefaultDeadLetterLimit = driver.DefaultDeadLetterLimit

// Message is a job as a Backend stores it.
//
// Deprecated: use driver.Message.
type Message = driver.Message

// Delivery is a leased Message.
//
// Deprecated: use driver.Delivery.
type Delivery = driver.Delivery

// DeadMessage is a dead letter as a Backend stores it.
//
// Deprecated: use driver.DeadMessage.
type DeadMessage = driver.DeadMessage

// EnqueueResult reports side effects of a successful Enqueue.
//
// Deprecated: use driver.EnqueueResult.
type EnqueueResult = driver.EnqueueResult

// BuryResult reports side effects of a successful Bury.
//
// Deprecated: use driver.BuryResult.
type BuryResult = driver.BuryResult

// BackendStats are a backend's gauges at one instant.
//
// Deprecated: use driver.Stats.
type BackendStats = driver.Stats

// SharedLease is implemented by a Backend whose lease is one setting of the
// queue.
//
// Deprecated: use driver.SharedLease.
type SharedLease = driver.SharedLease

// Reconnecter is implemented by a Backend that keeps a connection to a
// broker.
//
// Deprecated: use driver.Reconnecter.
type Reconnecter = driver.Reconnecter

// Memory is the in-memory Backend, the default of New.
//
// Deprecated: use memory.Backend.
type Memory = memory.Backend

// NewMemory returns an empty in-memory backend.
//
// Deprecated: use memory.New.
func NewMemory() *Memory { return memory.New() }
