package promcorral

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-go/corral/latency"
	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/queue"
)

// descs are the descriptions of every metric a Collector exports.
type descs struct {
	poolSubmitted, poolFinished, poolRejected, poolDropped, poolSkipped *prometheus.Desc
	poolRunning, poolQueued, poolWaiting, poolWorkers                   *prometheus.Desc
	poolWait, poolRun, poolEndToEnd                                     *prometheus.Desc

	queueJobs, queueLag, queueReachable                                *prometheus.Desc
	queueEnqueued, queueDuplicates, queueRejected, queueDropped        *prometheus.Desc
	queueAcked, queueRetried, queueDead, queueDeadEvicted, queueErrors *prometheus.Desc
	queueWait, queueRun, queueEndToEnd, queueStatsErrors               *prometheus.Desc
	queueReconnects, queueLosses                                       *prometheus.Desc

	shareHeld, shareCap, shareWeight, shareWaiting, shareTurns *prometheus.Desc
	shareBusy, shareRatio, shareStatsErrors                    *prometheus.Desc

	budgetTokens *prometheus.Desc
}

func newDescs(ns string) descs {
	d := func(sub, name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, sub, name), help, labels, nil)
	}
	p, q, s := []string{"pool"}, []string{"queue"}, []string{"share", "consumer"}
	return descs{
		poolSubmitted: d("pool", "tasks_submitted_total", "Tasks passed to Submit, Call and Group.Go.", p...),
		poolFinished:  d("pool", "tasks_finished_total", "Tasks that ran, by outcome: completed (returned nil), failed (returned an error or called runtime.Goexit), panicked.", append(p, "outcome")...),
		poolRejected:  d("pool", "tasks_rejected_total", "Tasks not accepted: ErrFull, ErrClosed, or the submitter's context ended first.", p...),
		poolDropped:   d("pool", "tasks_dropped_total", "Tasks accepted or offered, then dropped, by reason: refused (DropNewest), evicted (DropOldest), shutdown (abandoned by Close).", append(p, "reason")...),
		poolSkipped:   d("pool", "tasks_skipped_total", "Tasks not run because their context ended first.", p...),
		poolRunning:   d("pool", "tasks_running", "Tasks running now.", p...),
		poolQueued:    d("pool", "tasks_queued", "Tasks in the queue now.", p...),
		poolWaiting:   d("pool", "submitters_waiting", "Submitters blocked now (Block).", p...),
		poolWorkers:   d("pool", "workers", "Worker goroutines now.", p...),
		poolWait:      d("pool", "task_wait_seconds", "Time from submit to start of the finished tasks (a sample of about one task in 64; every task with pool.WithTimings).", p...),
		poolRun:       d("pool", "task_run_seconds", "Time from start to finish of the finished tasks (a sample of about one task in 64; every task with pool.WithTimings).", p...),
		poolEndToEnd:  d("pool", "task_end_to_end_seconds", "Time from submit to finish of the finished tasks (a sample of about one task in 64; every task with pool.WithTimings).", p...),

		queueJobs:        d("queue", "jobs", "Jobs the backend stores now, by state: ready, in_flight, delayed, dead (dead letters kept), awaiting_version.", append(q, "state")...),
		queueLag:         d("queue", "lag_seconds", "Age of the oldest stored job.", q...),
		queueReachable:   d("queue", "reachable", "1 if the backend was reachable at the last read, else 0.", q...),
		queueEnqueued:    d("queue", "jobs_enqueued_total", "Jobs accepted by this process (redriven ones included).", q...),
		queueDuplicates:  d("queue", "enqueue_duplicates_total", "Enqueue calls of this process that returned ErrDuplicate.", q...),
		queueRejected:    d("queue", "enqueue_rejected_total", "Enqueue calls of this process that returned ErrFull.", q...),
		queueDropped:     d("queue", "jobs_dropped_total", "Enqueue calls of this process that returned ErrDropped.", q...),
		queueAcked:       d("queue", "jobs_acked_total", "Jobs this process handled successfully.", q...),
		queueRetried:     d("queue", "jobs_retried_total", "Failed attempts this process scheduled for redelivery.", q...),
		queueDead:        d("queue", "jobs_dead_lettered_total", "Jobs this process dead-lettered, by reason.", append(q, "reason")...),
		queueDeadEvicted: d("queue", "dead_letters_evicted_total", "Dead letters deleted to keep the dead letters within their limit.", q...),
		queueErrors:      d("queue", "backend_errors_total", "Backend calls of this process's consumers that failed.", q...),
		queueReconnects:  d("queue", "backend_reconnects_total", "Times the backend re-established its connection to the broker (0 for a backend that keeps none).", q...),
		queueLosses:      d("queue", "backend_losses_total", "Times this process's backend found that the broker had lost what it stored for the queue (its jobs, if it had any, dead letters and leases); 0 for a backend that cannot tell.", q...),
		queueWait:        d("queue", "job_wait_seconds", "Time from enqueue (or NotBefore) to handler start of this process's handler runs (a sample of about one run in 64; every run with queue.WithTimings).", q...),
		queueRun:         d("queue", "job_run_seconds", "Time from handler start to end of this process's handler runs (a sample of about one run in 64; every run with queue.WithTimings).", q...),
		queueEndToEnd:    d("queue", "job_end_to_end_seconds", "Time from enqueue (or NotBefore) to handler end of this process's handler runs (a sample of about one run in 64; every run with queue.WithTimings).", q...),
		queueStatsErrors: d("queue", "stats_errors_total", "Reads of the queue's Stats by this collector that failed or timed out.", q...),

		shareHeld:        d("share", "slots_held", "Slots of the Share the consumer holds now.", s...),
		shareCap:         d("share", "slots_cap", "Most slots the consumer may hold.", s...),
		shareWeight:      d("share", "weight", "The consumer's weight in the Share.", s...),
		shareWaiting:     d("share", "jobs_waiting", "The consumer's jobs received and waiting for a slot now.", s...),
		shareTurns:       d("share", "turns_total", "Slots the consumer was given since it joined.", s...),
		shareBusy:        d("share", "busy_seconds_total", "Worker time the consumer has used since it joined.", s...),
		shareRatio:       d("share", "busy_ratio", "The consumer's busy time over that of every consumer of the Share.", s...),
		shareStatsErrors: d("share", "stats_errors_total", "Reads of the Share's Stats by this collector that failed or timed out.", "share"),

		budgetTokens: d("retry", "budget_tokens", "Tokens in the retry budget now.", "budget"),
	}
}

// all lists every description, for Describe.
func (d *descs) all() []*prometheus.Desc {
	return []*prometheus.Desc{
		d.poolSubmitted, d.poolFinished, d.poolRejected, d.poolDropped, d.poolSkipped,
		d.poolRunning, d.poolQueued, d.poolWaiting, d.poolWorkers, d.poolWait, d.poolRun, d.poolEndToEnd,
		d.queueJobs, d.queueLag, d.queueReachable, d.queueEnqueued, d.queueDuplicates, d.queueRejected,
		d.queueDropped, d.queueAcked, d.queueRetried, d.queueDead, d.queueDeadEvicted, d.queueErrors,
		d.queueWait, d.queueRun, d.queueEndToEnd, d.queueStatsErrors, d.queueReconnects, d.queueLosses,
		d.shareHeld, d.shareCap, d.shareWeight, d.shareWaiting, d.shareTurns, d.shareBusy, d.shareRatio,
		d.shareStatsErrors, d.budgetTokens,
	}
}

// emit sends metrics to ch; a collector's methods below bind it to one source's labels.
type emit struct {
	ch      chan<- prometheus.Metric
	buckets []bucketBound
}

func (e emit) counter(d *prometheus.Desc, v uint64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func (e emit) gauge(d *prometheus.Desc, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (e emit) histogram(d *prometheus.Desc, h *latency.Histogram, labels ...string) {
	e.ch <- histogram(d, h, e.buckets, labels...)
}

// pool exports the Stats of the pool called name.
func (e emit) pool(d *descs, name string, s *pool.Stats) {
	e.counter(d.poolSubmitted, s.Submitted, name)
	e.counter(d.poolFinished, s.Completed, name, "completed")
	e.counter(d.poolFinished, s.Failed, name, "failed")
	e.counter(d.poolFinished, s.Panicked, name, "panicked")
	e.counter(d.poolRejected, s.Rejected, name)
	e.counter(d.poolDropped, s.Dropped.Refused, name, "refused")
	e.counter(d.poolDropped, s.Dropped.Evicted, name, "evicted")
	e.counter(d.poolDropped, s.Dropped.Shutdown, name, "shutdown")
	e.counter(d.poolSkipped, s.Skipped, name)
	e.gauge(d.poolRunning, float64(s.Running), name)
	e.gauge(d.poolQueued, float64(s.Queued), name)
	e.gauge(d.poolWaiting, float64(s.Waiting), name)
	e.gauge(d.poolWorkers, float64(s.Workers), name)
	e.histogram(d.poolWait, &s.Wait, name)
	e.histogram(d.poolRun, &s.Run, name)
	e.histogram(d.poolEndToEnd, &s.EndToEnd, name)
}

// queueReasons are the dead-letter reasons exported, each always (0 until it happens).
var queueReasons = []queue.Reason{queue.ReasonAttempts, queue.ReasonPermanent, queue.ReasonPanic,
	queue.ReasonEvicted, queue.ReasonExpired, queue.ReasonDecode, queue.ReasonVersion}

// queue exports the Stats of the queue called name.
func (e emit) queue(d *descs, name string, s *queue.Stats) {
	e.gauge(d.queueJobs, float64(s.Ready), name, "ready")
	e.gauge(d.queueJobs, float64(s.InFlight), name, "in_flight")
	e.gauge(d.queueJobs, float64(s.Delayed), name, "delayed")
	e.gauge(d.queueJobs, float64(s.Dead), name, "dead")
	e.gauge(d.queueJobs, float64(s.AwaitingVersion), name, "awaiting_version")
	e.gauge(d.queueLag, s.Lag.Seconds(), name)
	reachable := 0.0
	if s.Health.Reachable {
		reachable = 1
	}
	e.gauge(d.queueReachable, reachable, name)
	e.counter(d.queueEnqueued, s.Enqueued, name)
	e.counter(d.queueDuplicates, s.Duplicates, name)
	e.counter(d.queueRejected, s.Rejected, name)
	e.counter(d.queueDropped, s.Dropped, name)
	e.counter(d.queueAcked, s.Acked, name)
	e.counter(d.queueRetried, s.Retried, name)
	for _, r := range queueReasons {
		e.counter(d.queueDead, s.DeadLettered[r], name, string(r))
	}
	e.counter(d.queueDeadEvicted, s.DeadEvicted, name)
	e.counter(d.queueErrors, s.BackendErrors, name)
	e.counter(d.queueReconnects, s.Health.Reconnects, name)
	e.counter(d.queueLosses, s.Health.Losses, name)
	e.histogram(d.queueWait, &s.Wait, name)
	e.histogram(d.queueRun, &s.Run, name)
	e.histogram(d.queueEndToEnd, &s.EndToEnd, name)
}

// share exports the Stats of the consumers of the Share called name.
func (e emit) share(d *descs, name string, consumers []queue.ShareStats) {
	for i := range consumers {
		s := &consumers[i]
		e.gauge(d.shareHeld, float64(s.Running), name, s.Name)
		e.gauge(d.shareCap, float64(s.Cap), name, s.Name)
		e.gauge(d.shareWeight, float64(s.Weight), name, s.Name)
		e.gauge(d.shareWaiting, float64(s.Waiting), name, s.Name)
		e.counter(d.shareTurns, s.Turns, name, s.Name)
		e.ch <- prometheus.MustNewConstMetric(d.shareBusy, prometheus.CounterValue, s.Busy.Seconds(), name, s.Name)
		e.gauge(d.shareRatio, s.Share, name, s.Name)
	}
}
