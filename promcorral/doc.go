// Package promcorral exports the state of corral's pools, queues, Shares and retry budgets to
// Prometheus: a [Collector] is a prometheus.Collector that reads their Stats as it is
// scraped.
//
//	c := promcorral.New(
//		promcorral.WithPool("thumbnails", p),
//		promcorral.WithQueue("emails", q),
//	)
//	prometheus.MustRegister(c)
//
// Names carry their unit ("_seconds") and counters end in "_total"; every series of a pool,
// queue, Share or budget has a label naming it (pool, queue, share and consumer, budget),
// with the name given to the option. The histograms of wait, run and end-to-end time are
// converted from the [latency.Histogram] values of pool.Stats and queue.Stats: their counts
// and sums are exact, and their buckets are a subset of latency's (see [WithBuckets]). A pool
// or queue records them for a sample of about one task or handler run in 64, or for every one
// when it is timed (pool.WithTimings, queue.WithTimings): without that, a histogram's count is
// the sample's, and the number of tasks or jobs is read from the counters.
//
// A pool's Stats and a budget's balance are read on every scrape: they are in memory and
// cheap. A queue's Stats and a Share's may ask a backend over the network, so the Collector
// reads each with a deadline ([WithStatsTimeout]) at most once per interval
// ([WithStatsInterval]) and serves the values it read to every scrape in between: however
// many scrapers there are and however often they come, a queue's backend answers at most one
// Stats call per interval. A read that fails or times out is counted
// (corral_queue_stats_errors_total, corral_share_stats_errors_total) and the values of the
// last read that succeeded are exported again, so that a slow backend delays no scrape by
// more than the deadline and a failing one leaves no gap in counters; but a queue's health is
// the failed read's (queue.Queue's Stats returns its Health with the error):
// corral_queue_reachable 0 during an outage, and the reconnect and loss counts as of then.
//
// The metrics, with the default namespace "corral" (see [WithNamespace]):
//
//	pool   corral_pool_tasks_submitted_total, corral_pool_tasks_finished_total{outcome},
//	       corral_pool_tasks_rejected_total, corral_pool_tasks_dropped_total{reason},
//	       corral_pool_tasks_skipped_total, corral_pool_tasks_running, corral_pool_tasks_queued,
//	       corral_pool_submitters_waiting, corral_pool_workers, corral_pool_task_wait_seconds,
//	       corral_pool_task_run_seconds, corral_pool_task_end_to_end_seconds
//	queue  corral_queue_jobs{state}, corral_queue_lag_seconds, corral_queue_reachable,
//	       corral_queue_jobs_enqueued_total, corral_queue_enqueue_duplicates_total,
//	       corral_queue_enqueue_rejected_total, corral_queue_jobs_dropped_total,
//	       corral_queue_jobs_acked_total, corral_queue_jobs_retried_total,
//	       corral_queue_jobs_dead_lettered_total{reason}, corral_queue_dead_letters_evicted_total,
//	       corral_queue_backend_errors_total, corral_queue_backend_reconnects_total,
//	       corral_queue_backend_losses_total, corral_queue_job_wait_seconds,
//	       corral_queue_job_run_seconds, corral_queue_job_end_to_end_seconds,
//	       corral_queue_stats_errors_total
//	share  corral_share_slots_held, corral_share_slots_cap, corral_share_weight,
//	       corral_share_jobs_waiting, corral_share_turns_total, corral_share_busy_seconds_total,
//	       corral_share_busy_ratio, corral_share_stats_errors_total
//	budget corral_retry_budget_tokens
//
// Each metric's help text says what it counts, in the words of the Stats field it is read
// from. A Collector is safe for concurrent use: any number of registries may scrape it at
// once.
package promcorral

// Where things are: collector.go holds Collector, New and Collect; options.go the options;
// metrics.go the descriptions of the metrics and what each kind of source exports; cache.go
// the cached, deadline-bounded reads of queues and Shares; histogram.go the conversion of a
// latency.Histogram to a Prometheus histogram.
