package queue

import (
	"context"
	"time"

	"github.com/corral-go/corral/latency"
	"github.com/corral-go/corral/queue/driver"
)

// Stats is a snapshot of a queue: the backend's gauges (what it stores now:
// Ready, InFlight, Delayed, Dead, Lag) and this process's counters since
// New (totals that only grow: Enqueued to BackendErrors). A gauge and a
// counter of the same word differ: Dead is the dead letters kept now,
// after purges and redrives; DeadLettered the jobs this process has
// dead-lettered.
type Stats struct {
	// Ready is the depth: jobs waiting to be handled now (including jobs
	// queued behind a busy ordering key). Ready+InFlight+Delayed is what
	// the backend stores.
	Ready int
	// InFlight counts jobs being handled (leased).
	InFlight int
	// Delayed counts jobs waiting for their delay or retry backoff.
	Delayed int
	// Dead counts the dead letters kept now.
	Dead int
	// Lag is the age of the oldest stored job (0 if none).
	Lag time.Duration
	// Paused says the queue is paused ([Queue.Pause]): its consumers, in
	// every process, start no job until [Queue.Resume].
	Paused bool
	// AwaitingVersion counts the jobs that this process's consumers handed
	// back because they do not understand their payload version (see
	// [WithVersion]), and that wait for a consumer that does: those that
	// came back to this process since, or will. A job another process took
	// drops out of the count once it has not come back for twice its last
	// hand-back delay and 10s more.
	AwaitingVersion int

	// Enqueued counts accepted jobs (redriven ones included).
	Enqueued uint64
	// Duplicates counts Enqueue calls that returned ErrDuplicate or
	// ErrNotUnique.
	Duplicates uint64
	// Rejected counts Enqueue calls that returned ErrFull.
	Rejected uint64
	// Dropped counts Enqueue calls that returned ErrDropped.
	Dropped uint64
	// Acked counts jobs handled successfully.
	Acked uint64
	// Retried counts failed attempts scheduled for redelivery.
	Retried uint64
	// Snoozed counts the jobs put back by their handler's [Snooze].
	Snoozed uint64
	// DeadLettered counts jobs dead-lettered, by reason.
	DeadLettered map[Reason]uint64
	// DeadEvicted counts dead letters deleted to keep the dead letters
	// within the limit (see [WithDeadLetterLimit]).
	DeadEvicted uint64
	// BackendErrors counts the backend calls of this process's consumers
	// that failed, other than by the consumer's own shutdown: a receive
	// (retried after a backoff), a lease renewal, or the settling of a job
	// (ack, retry, release or dead letter), whose job the backend then
	// redelivers when its lease ends. A growing count is a backend in
	// trouble, or leases too short for the handlers. A renewal refused
	// because the job was settled meanwhile is not counted: no job was
	// affected.
	BackendErrors uint64

	// Health is the queue's [Health] when the snapshot was taken.
	Health Health

	// The distributions of the handler runs of this process's consumers of
	// the queue since New. A timed queue ([WithTimings], or an OnSuccess,
	// OnRetry or OnDead hook) records every run; any other records a
	// sample, about one run in 64: each worker times its first run, then
	// skips 0 to 126 runs before the next it times, following a fixed
	// pseudo-random sequence (so that jobs that repeat with a period are
	// not sampled in step with it). Timing costs a sampled run a clock
	// reading or two, and the others nothing. The sample's percentiles
	// estimate the whole's: the share of all runs above a percentile read
	// from the sample is off by about 1/sqrt(k) of itself (one standard
	// deviation), where k is the number of sampled runs above it (10% for
	// the p99 of 10,000 sampled runs), on top of the buckets' error (see
	// latency.Histogram). Count, Sum and Max are the sample's: read the
	// number of runs from the counters. (The consumers of other processes
	// record theirs: Merge the histograms of every process for the whole
	// queue; their buckets are the same, so they add up.) A timed run is recorded when its handler returns,
	// panics or calls runtime.Goexit, before the job is settled (so a Stats
	// call made after a job was seen settled counts its run, if timed);
	// every timed run is recorded in all three, so, in a snapshot taken
	// while no handler ends,
	//
	//	Wait.Count == Run.Count == EndToEnd.Count
	//	EndToEnd.Sum == Wait.Sum + Run.Sum
	//
	// A job's wait is counted from when it was enqueued (Job.EnqueuedAt),
	// or from its NotBefore if later, to when its handler starts (just
	// after OnStart); a retry's wait is counted from the same time, so it
	// includes the earlier runs and their backoff. A wait that would be
	// negative (a NotBefore or EnqueuedAt ahead of this process's clock) is
	// recorded as 0. Wait and EndToEnd compare this process's clock with
	// the EnqueuedAt that the producer's process read: a job enqueued by
	// another process, through a backend that stores it, is timed across
	// the two machines' wall clocks, and their offset is in its wait. Run
	// is read from this process's monotonic clock, from the handler's start
	// to its end, exact up to the clock's resolution. Its start is read as
	// the handler starts (after OnStart), except on the in-memory backend's
	// fast path (no OnStart hook, no Share), where it is the reading taken
	// as the worker took the job (for a job taken as the job before it was
	// acked, that one's end): the steps of corral's own between that and the
	// handler (decoding the payload, starting the lease), which do not
	// wait, count in the run and not in the wait.
	Wait     latency.Histogram // from enqueued (or NotBefore) to the handler's start
	Run      latency.Histogram // from the handler's start to its end
	EndToEnd latency.Histogram // from enqueued (or NotBefore) to the handler's end: Wait + Run
	// Periodic lists the periodic jobs this process runs ([Queue.Periodic]),
	// by name: each one's next tick and the outcome of its last.
	Periodic []PeriodicStats
}

// DeadLetteredTotal returns the number of jobs dead-lettered, all reasons
// together: the sum of s.DeadLettered.
func (s Stats) DeadLetteredTotal() uint64 {
	var n uint64
	for _, v := range s.DeadLettered {
		n += v
	}
	return n
}

// Stats returns a snapshot of the queue. If the backend's gauges cannot be
// read (or the queue is closed: ErrClosed), it returns the error with the
// counters and Health all the same, and the gauges (Ready, InFlight,
// Delayed, Dead, Lag) zero.
func (q *Queue[T]) Stats(ctx context.Context) (Stats, error) {
	err := q.usable()
	var bs driver.Stats
	if err == nil {
		bs, err = q.backend.Stats(ctx)
		q.observe(ctx, err)
		if q.lossesGrew() { // a backend may find a loss and fail all the same
			q.lossFound(ctx, healthOf(q.hl.State()))
		}
	} else {
		q.observe(ctx, err)
	}
	if err != nil {
		bs = driver.Stats{}
	}
	s := Stats{
		Ready: bs.Ready, InFlight: bs.InFlight, Delayed: bs.Delayed, Dead: bs.Dead, Paused: bs.Paused,
		DeadEvicted:     q.c.DeadEvicted.Load(),
		AwaitingVersion: q.vers.Waits.Count(q.clk.Now()),
		Enqueued:        q.c.Enqueued.Load(),
		Duplicates:      q.c.Duplicates.Load(),
		Rejected:        q.c.Rejected.Load(),
		Dropped:         q.c.Dropped.Load(),
		Acked:           q.c.Acked.Load(),
		Retried:         q.c.Retried.Load(),
		Snoozed:         q.c.Snoozed.Load(),
		BackendErrors:   q.c.BackendErrors.Load(),
		DeadLettered:    q.c.DeadLettered(),
	}
	lat := q.lat.Snapshot()
	s.Wait, s.Run, s.EndToEnd = lat.Wait, lat.Run, lat.EndToEnd
	if !bs.Oldest.IsZero() {
		s.Lag = time.Since(bs.Oldest)
	}
	if err == nil {
		q.hl.SetPaused(bs.Paused)
	}
	s.Health = q.Health()
	s.Periodic = q.periodicStats()
	return s, err
}
