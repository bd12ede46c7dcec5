package pool

import "time"

// Stats is a snapshot of a pool's counters and gauges, all read at one instant, so that they
// are consistent with each other. Every submitted task is counted exactly once in one of
// Completed, Failed, Panicked, Rejected, Dropped, Skipped or, while it is not finished, in
// Running, Queued or Waiting:
//
//	Submitted == Completed + Failed + Panicked + Rejected + Dropped.Total() + Skipped +
//	             Running + Queued + Waiting
//
// and Started == Completed + Failed + Panicked + Running.
type Stats struct {
	Submitted uint64 // tasks passed to Submit, Call and Group.Go
	Started   uint64 // tasks that began to run
	Completed uint64 // tasks that ran and returned nil
	Failed    uint64 // tasks that ran and returned an error (or called runtime.Goexit)
	Panicked  uint64 // tasks that ran and panicked
	Rejected  uint64 // tasks not accepted: ErrFull, ErrClosed, or ctx ended first
	Dropped   Drops  // tasks accepted or offered, then dropped, by reason
	Skipped   uint64 // tasks not run because their context ended first (ReasonExpired)
	Inline    uint64 // of Started: tasks run in a caller's goroutine (CallerRuns, Group)

	Running int // tasks running now
	Queued  int // tasks in the queue now
	Waiting int // submitters blocked now (Block)
	Workers int // worker goroutines now

	// The summaries always count tasks; Total and Max stay zero unless the pool was created
	// with WithTimings (or a Hooks.OnError, which times tasks too).
	QueueWait Summary // time from queueing to start, of started tasks (0 for hand-offs)
	RunTime   Summary // time from start to return, of finished tasks
}

// Drops counts dropped tasks by reason: a field per Reason, except ReasonExpired, whose tasks
// are counted in Stats.Skipped (they were accepted and then skipped, not dropped for room).
type Drops struct {
	Refused  uint64 // incoming task refused (DropNewest)
	Evicted  uint64 // oldest queued task evicted (DropOldest)
	Shutdown uint64 // queued task abandoned by Close
}

// Total returns the number of dropped tasks.
func (d Drops) Total() uint64 { return d.Refused + d.Evicted + d.Shutdown }

// Summary summarises a set of durations.
type Summary struct {
	// Count is the number of durations.
	Count uint64
	// Total is their sum (zero unless the pool is timed: see WithTimings).
	Total time.Duration
	// Max is the longest of them (zero unless the pool is timed).
	Max time.Duration
}

// Mean returns Total / Count, or 0 if Count is 0.
func (s Summary) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Count)
}

type summary struct {
	count      uint64
	total, max int64
}

func (s *summary) add(d int64) {
	s.count++
	s.total += d
	if d > s.max {
		s.max = d
	}
}

func (s summary) export() Summary {
	return Summary{Count: s.count, Total: time.Duration(s.total), Max: time.Duration(s.max)}
}

// counters are guarded by Pool.mu. Every hot-path update happens inside a critical section
// that exists anyway (to queue or hand off a task, or to fetch the next one), so counting
// costs a few additions and no extra synchronisation.
type counters struct {
	submitted, started, completed, failed, panicked, rejected, skipped, inline uint64
	refused, evicted, shutdown                                                 uint64
	running                                                                    int
	wait, run                                                                  summary
}

// Stats returns a consistent snapshot of the pool's counters. It is safe for concurrent use;
// it takes the pool's lock for the time it takes to copy the counters. It does no I/O and
// never blocks for long, so it takes no context. On a zero Pool it returns zero Stats.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{
		Submitted: p.st.submitted,
		Started:   p.st.started,
		Completed: p.st.completed,
		Failed:    p.st.failed,
		Panicked:  p.st.panicked,
		Rejected:  p.st.rejected,
		Dropped:   Drops{Refused: p.st.refused, Evicted: p.st.evicted, Shutdown: p.st.shutdown},
		Skipped:   p.st.skipped,
		Inline:    p.st.inline,
		Running:   p.st.running,
		Queued:    p.queued,
		Waiting:   p.blocked.n,
		Workers:   p.live,
		QueueWait: p.st.wait.export(),
		RunTime:   p.st.run.export(),
	}
}
