// Package stats keeps the counters and the run distributions of one queue in
// one process, which queue.Stats reports.
//
// The contract: any goroutine may add to a counter, record a run, or read
// either, at once and without a lock (but for the first use of a shard).
// Counters only grow. A reader sees every addition and every run recorded
// before its read began (that synchronizes before the read), and perhaps
// some made while it reads: the counters and distributions read one after
// the other are not a snapshot of one instant.
package stats

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/clock"
	"github.com/corral-go/corral/latency"
	"github.com/corral-go/corral/queue/driver"
)

// Latencies are the distributions of the waits, runs and end-to-end times
// (wait + run) of the handler runs.
type Latencies struct {
	Wait, Run, EndToEnd latency.Recorder
}

// Shards are the distributions of a queue's handler runs, kept in a few
// Latencies (shards) that Snapshot merges: the workers of the queue record
// into shard i%Count, i being the worker's index in its consumer, so that
// workers running on different cores seldom write the same cache lines (a
// run recorded into lines that another core wrote last costs a transfer of
// each line), and the memory stays bounded whatever the number of workers.
// A shard is made when first used. The zero Shards is ready to use.
type Shards struct {
	mu     sync.Mutex // taken to make a shard
	shards [Count]atomic.Pointer[Latencies]
}

// Count is the number of shards.
const Count = 8

// A Snapshot is the three distributions of Latencies, merged.
type Snapshot struct {
	Wait, Run, EndToEnd latency.Histogram
}

// Shard returns the shard of the worker of index i (i >= 0).
func (s *Shards) Shard(i int) *Latencies {
	p := &s.shards[i%Count]
	if l := p.Load(); l != nil {
		return l
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := p.Load(); l != nil {
		return l
	}
	l := new(Latencies)
	p.Store(l)
	return l
}

// Snapshot returns the runs recorded into every shard.
func (s *Shards) Snapshot() Snapshot {
	var snap Snapshot
	for i := range s.shards {
		if l := s.shards[i].Load(); l != nil {
			snap.add(l)
		}
	}
	return snap
}

// add merges l's distributions into s.
func (s *Snapshot) add(l *Latencies) {
	s.Wait.Merge(l.Wait.Snapshot())
	s.Run.Merge(l.Run.Snapshot())
	s.EndToEnd.Merge(l.EndToEnd.Snapshot())
}

// Record records a handler run of the job m that started at start and
// ended at end (both since epoch), and returns how long it ran. The wait is
// from m's EnqueuedAt, or its NotBefore if later, to start; a wait that
// would be negative is recorded as 0.
func (l *Latencies) Record(m *driver.Message, epoch clock.Epoch, start, end time.Duration) time.Duration {
	run := end - start
	from := m.EnqueuedAt
	if !m.NotBefore.IsZero() && m.NotBefore.After(from) {
		from = m.NotBefore
	}
	wait := max(start-epoch.At(from), 0)
	l.Wait.Record(wait)
	l.Run.Record(run)
	l.EndToEnd.Record(wait + run)
	return run
}

// Counters are a queue's cumulative counts. The producers' counts and the
// consumers' counts sit on separate cache lines, so that a producer and a
// worker counting at once do not contend.
type Counters struct {
	Enqueued, Duplicates, Rejected, Dropped atomic.Uint64
	_                                       [64]byte
	Acked, Retried, Snoozed, BackendErrors  atomic.Uint64
	dead                                    [len(reasons)]atomic.Uint64
	DeadEvicted                             atomic.Uint64
}

// reasons lists the dead-letter reasons; Counters.dead counts each at its
// index here.
var reasons = [...]driver.Reason{driver.ReasonAttempts, driver.ReasonPermanent, driver.ReasonPanic,
	driver.ReasonEvicted, driver.ReasonExpired, driver.ReasonDecode, driver.ReasonVersion,
	driver.ReasonCanceled, driver.ReasonSnoozes}

// Dead returns the counter of the jobs dead-lettered with reason r (that of
// ReasonAttempts for a reason it does not know).
func (c *Counters) Dead(r driver.Reason) *atomic.Uint64 {
	for i, x := range reasons {
		if x == r {
			return &c.dead[i]
		}
	}
	return &c.dead[0]
}

// DeadLettered returns the counts of the jobs dead-lettered, by reason,
// with every reason present.
func (c *Counters) DeadLettered() map[driver.Reason]uint64 {
	m := make(map[driver.Reason]uint64, len(reasons))
	for i, r := range reasons {
		m[r] = c.dead[i].Load()
	}
	return m
}
