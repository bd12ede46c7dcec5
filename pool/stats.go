package pool

import (
	"time"

	"github.com/corral-go/corral/internal/bucket"
	"github.com/corral-go/corral/latency"
)

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

	// The distributions of the finished tasks' timings. A timed pool (WithTimings, or a
	// Hooks.OnError, which times tasks too) records every task; any other records a sample,
	// about one task in 64, picked as the tasks are submitted, in gaps of 0 to 126 tasks that
	// follow a fixed pseudo-random sequence (so that work that repeats with a period is not
	// sampled in step with it). Timing costs a picked task two or three clock readings, and
	// the others nothing. The sample's percentiles estimate the whole's: the share of all
	// tasks above a percentile read from the sample is off by about 1/sqrt(k) of itself (one
	// standard deviation), where k is the number of picked tasks above it (10% for the p99 of
	// 10,000 picked tasks), on top of the buckets' error (see latency.Histogram). Count, Sum
	// and Max are the sample's: read the number of tasks from Completed, Failed and Panicked.
	//
	// A task is submitted when Submit, Call or Group.Go is called, starts when it begins to
	// run (on a worker, or in the goroutine that runs it for its caller), and finishes when it
	// returns, panics or calls runtime.Goexit. For every task, its end-to-end time is its wait
	// plus its run time, so
	//
	//	Wait.Count == Run.Count == EndToEnd.Count (== Completed + Failed + Panicked when timed)
	//	EndToEnd.Sum == Wait.Sum + Run.Sum
	Wait     latency.Histogram // from submit to start: blocked in Submit, queued, handed over
	Run      latency.Histogram // from start to finish
	EndToEnd latency.Histogram // from submit to finish

	// Deprecated: QueueWait is Wait's Count, Sum (as Total) and Max: read Wait.
	QueueWait Summary
	// Deprecated: RunTime is Run's Count, Sum (as Total) and Max: read Run.
	RunTime Summary
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

// Summary summarises a set of durations: their number, sum and maximum.
//
// Deprecated: a latency.Histogram (Stats.Wait, Stats.Run) has the same Count, Sum (as Total)
// and Max, and their distribution.
type Summary struct {
	// Count is the number of durations.
	Count uint64
	// Total is their sum.
	Total time.Duration
	// Max is the longest of them.
	Max time.Duration
}

// Mean returns Total / Count, or 0 if Count is 0.
func (s Summary) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Count)
}

func summarise(h *latency.Histogram) Summary {
	return Summary{Count: h.Count, Total: h.Sum, Max: h.Max}
}

// timings are the distributions of Stats.Wait, Run and EndToEnd, made by New for a timed pool,
// and by timesLocked when the first sampled task of another ends (a pool that runs no task does
// not carry their buckets). The sums and maxima of the three sit
// side by side, so that recording a task touches one line of them and one bucket of each; the
// number of durations of each is the number of tasks finished, and Stats builds the
// latency.Histogram values.
type timings struct {
	sum, max         [3]time.Duration // wait, run, end to end
	wait, run, total [bucket.N]uint64 // counts per bucket
}

// timesLocked returns the pool's timings, made on first use.
func (p *Pool) timesLocked() *timings {
	if p.st.times == nil {
		p.st.times = new(timings)
	}
	return p.st.times
}

// record records a timed task of the stamp enq (1 + when it was submitted), started at start
// and finished at end (Pool.clock).
func (t *timings) record(enq, start, end int64) {
	enq--
	// A worker reads the clock before it takes the lock to fetch its next task, so a task
	// submitted meanwhile can seem to start before it was submitted: it started at once.
	start = max(start, enq)
	wait, run, total := time.Duration(start-enq), time.Duration(end-start), time.Duration(end-enq)
	t.wait[bucket.Of(wait)]++
	t.run[bucket.Of(run)]++
	t.total[bucket.Of(total)]++
	t.sum[0] += wait
	t.sum[1] += run
	t.sum[2] += total
	t.max[0] = max(t.max[0], wait)
	t.max[1] = max(t.max[1], run)
	t.max[2] = max(t.max[2], total)
}

// histogram returns distribution k (0 wait, 1 run, 2 end to end) of counts as a Histogram.
func (t *timings) histogram(k int, counts *[bucket.N]uint64) latency.Histogram {
	h := latency.Histogram{Sum: t.sum[k], Max: t.max[k], Counts: *counts}
	for _, n := range counts {
		h.Count += n
	}
	return h
}

// counters are guarded by Pool.mu. Every hot-path update happens inside a critical section
// that exists anyway (to queue or hand off a task, or to fetch the next one), so counting
// costs a few additions and no extra synchronisation.
type counters struct {
	submitted, started, completed, failed, panicked, rejected, skipped, inline uint64
	refused, evicted, shutdown                                                 uint64
	running                                                                    int
	times                                                                      *timings // nil until a task's timings are recorded
}

// Stats returns a consistent snapshot of the pool's counters. It is safe for concurrent use;
// it takes the pool's lock for the time it takes to copy the counters. It does no I/O and
// never blocks for long, so it takes no context. On a zero Pool it returns zero Stats. A
// task's return synchronizes before a Stats call that counts it as ended returns.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{
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
	}
	if t := p.st.times; t != nil {
		s.Wait, s.Run, s.EndToEnd = t.histogram(0, &t.wait), t.histogram(1, &t.run), t.histogram(2, &t.total)
		s.QueueWait, s.RunTime = summarise(&s.Wait), summarise(&s.Run)
	}
	return s
}
