package promcorral_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/promcorral"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

var bg = context.Background()

// buckets are three bounds of latency's buckets (powers of two of nanoseconds), so that the
// exported le values are the bounds given.
var buckets = promcorral.WithBuckets(1<<20, 1<<30, 1<<31)

// A scripted pool: one task completes after 3ms, one queued behind it fails, one is refused
// (DropNewest), one panics. Every exported value is exact.
func TestPoolWorkload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 1, pool.WithTimings(), pool.WithOverflow(pool.DropNewest))
		gate := make(chan struct{})
		submit := func(fn func(context.Context) error) error { return p.Submit(bg, fn) }
		must(t, submit(func(context.Context) error { <-gate; time.Sleep(3 * time.Millisecond); return nil }))
		must(t, submit(func(context.Context) error { return errors.New("failed") })) // queued
		if err := submit(func(context.Context) error { return nil }); !errors.Is(err, pool.ErrDropped) {
			t.Fatalf("third Submit: %v, want ErrDropped", err)
		}
		close(gate)
		time.Sleep(time.Second)
		must(t, submit(func(context.Context) error { panic("boom") }))
		must(t, p.Close(bg))

		c := promcorral.New(promcorral.WithPool("img", p), buckets)
		// Waits: 0, 3ms (behind the first), 0. Runs: 3ms, 0, 0.
		compare(t, c, `
# HELP corral_pool_tasks_submitted_total Tasks passed to Submit, Call and Group.Go.
# TYPE corral_pool_tasks_submitted_total counter
corral_pool_tasks_submitted_total{pool="img"} 4
# HELP corral_pool_tasks_finished_total Tasks that ran, by outcome: completed (returned nil), failed (returned an error or called runtime.Goexit), panicked.
# TYPE corral_pool_tasks_finished_total counter
corral_pool_tasks_finished_total{outcome="completed",pool="img"} 1
corral_pool_tasks_finished_total{outcome="failed",pool="img"} 1
corral_pool_tasks_finished_total{outcome="panicked",pool="img"} 1
# HELP corral_pool_tasks_rejected_total Tasks not accepted: ErrFull, ErrClosed, or the submitter's context ended first.
# TYPE corral_pool_tasks_rejected_total counter
corral_pool_tasks_rejected_total{pool="img"} 0
# HELP corral_pool_tasks_dropped_total Tasks accepted or offered, then dropped, by reason: refused (DropNewest), evicted (DropOldest), shutdown (abandoned by Close).
# TYPE corral_pool_tasks_dropped_total counter
corral_pool_tasks_dropped_total{pool="img",reason="evicted"} 0
corral_pool_tasks_dropped_total{pool="img",reason="refused"} 1
corral_pool_tasks_dropped_total{pool="img",reason="shutdown"} 0
# HELP corral_pool_tasks_skipped_total Tasks not run because their context ended first.
# TYPE corral_pool_tasks_skipped_total counter
corral_pool_tasks_skipped_total{pool="img"} 0
# HELP corral_pool_tasks_running Tasks running now.
# TYPE corral_pool_tasks_running gauge
corral_pool_tasks_running{pool="img"} 0
# HELP corral_pool_workers Worker goroutines now.
# TYPE corral_pool_workers gauge
corral_pool_workers{pool="img"} 0
# HELP corral_pool_task_wait_seconds Time from submit to start of the finished tasks (a sample of about one task in 64; every task with pool.WithTimings).
# TYPE corral_pool_task_wait_seconds histogram
corral_pool_task_wait_seconds_bucket{pool="img",le="0.001048576"} 2
corral_pool_task_wait_seconds_bucket{pool="img",le="1.073741824"} 3
corral_pool_task_wait_seconds_bucket{pool="img",le="2.147483648"} 3
corral_pool_task_wait_seconds_bucket{pool="img",le="+Inf"} 3
corral_pool_task_wait_seconds_sum{pool="img"} 0.003
corral_pool_task_wait_seconds_count{pool="img"} 3
# HELP corral_pool_task_run_seconds Time from start to finish of the finished tasks (a sample of about one task in 64; every task with pool.WithTimings).
# TYPE corral_pool_task_run_seconds histogram
corral_pool_task_run_seconds_bucket{pool="img",le="0.001048576"} 2
corral_pool_task_run_seconds_bucket{pool="img",le="1.073741824"} 3
corral_pool_task_run_seconds_bucket{pool="img",le="2.147483648"} 3
corral_pool_task_run_seconds_bucket{pool="img",le="+Inf"} 3
corral_pool_task_run_seconds_sum{pool="img"} 0.003
corral_pool_task_run_seconds_count{pool="img"} 3
# HELP corral_pool_task_end_to_end_seconds Time from submit to finish of the finished tasks (a sample of about one task in 64; every task with pool.WithTimings).
# TYPE corral_pool_task_end_to_end_seconds histogram
corral_pool_task_end_to_end_seconds_bucket{pool="img",le="0.001048576"} 1
corral_pool_task_end_to_end_seconds_bucket{pool="img",le="1.073741824"} 3
corral_pool_task_end_to_end_seconds_bucket{pool="img",le="2.147483648"} 3
corral_pool_task_end_to_end_seconds_bucket{pool="img",le="+Inf"} 3
corral_pool_task_end_to_end_seconds_sum{pool="img"} 0.006
corral_pool_task_end_to_end_seconds_count{pool="img"} 3
`, "corral_pool_tasks_submitted_total", "corral_pool_tasks_finished_total", "corral_pool_tasks_rejected_total",
			"corral_pool_tasks_dropped_total", "corral_pool_tasks_skipped_total", "corral_pool_tasks_running",
			"corral_pool_workers", "corral_pool_task_wait_seconds", "corral_pool_task_run_seconds",
			"corral_pool_task_end_to_end_seconds")
	})
}

// A scripted queue on a Share, with a retry budget beside it: two successes (one after a
// retry), a drop, a panic, a permanent failure and a job that uses up its attempts. Every
// exported value is exact.
func TestQueueWorkload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := queue.New[string](bg, queue.WithTimings(), queue.WithCapacity(2), queue.WithOverflow(queue.DropNewest))
		must(t, err)
		defer q.Close(bg)
		sh := queue.NewShare(2, queue.Weighted)
		flakyRuns := 0
		c, err := q.Consume(bg, func(_ context.Context, j queue.Job[string]) error {
			switch j.Payload {
			case "ok":
				time.Sleep(2 * time.Millisecond)
			case "flaky":
				if flakyRuns++; flakyRuns == 1 {
					return errors.New("flaky")
				}
			case "panic":
				panic("boom")
			case "permanent":
				return retry.Permanent(errors.New("bad input"))
			case "fail":
				return errors.New("down")
			}
			return nil
		}, queue.WithWorkers(1), queue.WithMaxAttempts(2), queue.WithBackoff(backoff.Constant(time.Second)),
			queue.WithShare(sh, "mail", 3))
		must(t, err)
		enqueue := func(p string) error {
			_, err := q.Enqueue(bg, p)
			synctest.Wait() // the worker has taken the job, or is busy
			return err
		}
		// The worker is busy with "ok" for 2ms and "flaky" waits: the queue is full.
		must(t, enqueue("ok"))
		must(t, enqueue("flaky"))
		if err := enqueue("x"); !errors.Is(err, queue.ErrDropped) {
			t.Fatalf("Enqueue into a full queue: %v, want ErrDropped", err)
		}
		time.Sleep(2 * time.Second) // "flaky" runs again after 1s
		for _, p := range []string{"panic", "permanent", "fail"} {
			must(t, enqueue(p))
		}
		time.Sleep(2 * time.Second) // "fail" runs again after 1s, and dies
		synctest.Wait()

		b := retry.NewBudget(1, 0) // starts with 1000 tokens
		calls := 0
		must(t, retry.Do(bg, retry.New(retry.WithBudget(b), retry.WithBackoff(backoff.Constant(0))), func(context.Context) error {
			if calls++; calls < 3 {
				return errors.New("again")
			}
			return nil
		})) // two retries withdraw 2 tokens; the success deposits 1

		col := promcorral.New(promcorral.WithQueue("mail", q), promcorral.WithShare("workers", sh),
			promcorral.WithBudget("api", b), buckets)
		// Runs: ok 2ms; flaky, flaky, panic, permanent, fail, fail 0. Waits (enqueue to
		// start): ok 0, flaky 2ms then 2ms+1s, panic, permanent, fail 0, fail 1s.
		compare(t, col, `
# HELP corral_queue_jobs Jobs the backend stores now, by state: ready, in_flight, delayed, dead (dead letters kept), awaiting_version.
# TYPE corral_queue_jobs gauge
corral_queue_jobs{queue="mail",state="awaiting_version"} 0
corral_queue_jobs{queue="mail",state="dead"} 3
corral_queue_jobs{queue="mail",state="delayed"} 0
corral_queue_jobs{queue="mail",state="in_flight"} 0
corral_queue_jobs{queue="mail",state="ready"} 0
# HELP corral_queue_reachable 1 if the backend was reachable at the last read, else 0.
# TYPE corral_queue_reachable gauge
corral_queue_reachable{queue="mail"} 1
# HELP corral_queue_jobs_enqueued_total Jobs accepted by this process (redriven ones included).
# TYPE corral_queue_jobs_enqueued_total counter
corral_queue_jobs_enqueued_total{queue="mail"} 5
# HELP corral_queue_jobs_dropped_total Enqueue calls of this process that returned ErrDropped.
# TYPE corral_queue_jobs_dropped_total counter
corral_queue_jobs_dropped_total{queue="mail"} 1
# HELP corral_queue_jobs_acked_total Jobs this process handled successfully.
# TYPE corral_queue_jobs_acked_total counter
corral_queue_jobs_acked_total{queue="mail"} 2
# HELP corral_queue_jobs_retried_total Failed attempts this process scheduled for redelivery.
# TYPE corral_queue_jobs_retried_total counter
corral_queue_jobs_retried_total{queue="mail"} 2
# HELP corral_queue_jobs_dead_lettered_total Jobs this process dead-lettered, by reason.
# TYPE corral_queue_jobs_dead_lettered_total counter
corral_queue_jobs_dead_lettered_total{queue="mail",reason="attempts"} 1
corral_queue_jobs_dead_lettered_total{queue="mail",reason="decode"} 0
corral_queue_jobs_dead_lettered_total{queue="mail",reason="evicted"} 0
corral_queue_jobs_dead_lettered_total{queue="mail",reason="expired"} 0
corral_queue_jobs_dead_lettered_total{queue="mail",reason="panic"} 1
corral_queue_jobs_dead_lettered_total{queue="mail",reason="permanent"} 1
corral_queue_jobs_dead_lettered_total{queue="mail",reason="version"} 0
# HELP corral_queue_job_run_seconds Time from handler start to end of this process's handler runs (a sample of about one run in 64; every run with queue.WithTimings).
# TYPE corral_queue_job_run_seconds histogram
corral_queue_job_run_seconds_bucket{queue="mail",le="0.001048576"} 6
corral_queue_job_run_seconds_bucket{queue="mail",le="1.073741824"} 7
corral_queue_job_run_seconds_bucket{queue="mail",le="2.147483648"} 7
corral_queue_job_run_seconds_bucket{queue="mail",le="+Inf"} 7
corral_queue_job_run_seconds_sum{queue="mail"} 0.002
corral_queue_job_run_seconds_count{queue="mail"} 7
# HELP corral_queue_job_wait_seconds Time from enqueue (or NotBefore) to handler start of this process's handler runs (a sample of about one run in 64; every run with queue.WithTimings).
# TYPE corral_queue_job_wait_seconds histogram
corral_queue_job_wait_seconds_bucket{queue="mail",le="0.001048576"} 4
corral_queue_job_wait_seconds_bucket{queue="mail",le="1.073741824"} 7
corral_queue_job_wait_seconds_bucket{queue="mail",le="2.147483648"} 7
corral_queue_job_wait_seconds_bucket{queue="mail",le="+Inf"} 7
corral_queue_job_wait_seconds_sum{queue="mail"} 2.004
corral_queue_job_wait_seconds_count{queue="mail"} 7
# HELP corral_queue_stats_errors_total Reads of the queue's Stats by this collector that failed or timed out.
# TYPE corral_queue_stats_errors_total counter
corral_queue_stats_errors_total{queue="mail"} 0
# HELP corral_share_slots_held Slots of the Share the consumer holds now.
# TYPE corral_share_slots_held gauge
corral_share_slots_held{consumer="mail",share="workers"} 0
# HELP corral_share_slots_cap Most slots the consumer may hold.
# TYPE corral_share_slots_cap gauge
corral_share_slots_cap{consumer="mail",share="workers"} 1
# HELP corral_share_weight The consumer's weight in the Share.
# TYPE corral_share_weight gauge
corral_share_weight{consumer="mail",share="workers"} 3
# HELP corral_share_turns_total Slots the consumer was given since it joined.
# TYPE corral_share_turns_total counter
corral_share_turns_total{consumer="mail",share="workers"} 7
# HELP corral_share_busy_seconds_total Worker time the consumer has used since it joined.
# TYPE corral_share_busy_seconds_total counter
corral_share_busy_seconds_total{consumer="mail",share="workers"} 0.002
# HELP corral_share_busy_ratio The consumer's busy time over that of every consumer of the Share.
# TYPE corral_share_busy_ratio gauge
corral_share_busy_ratio{consumer="mail",share="workers"} 1
# HELP corral_retry_budget_tokens Tokens in the retry budget now.
# TYPE corral_retry_budget_tokens gauge
corral_retry_budget_tokens{budget="api"} 999
`, "corral_queue_jobs", "corral_queue_reachable", "corral_queue_jobs_enqueued_total", "corral_queue_jobs_dropped_total",
			"corral_queue_jobs_acked_total", "corral_queue_jobs_retried_total", "corral_queue_jobs_dead_lettered_total",
			"corral_queue_job_run_seconds", "corral_queue_job_wait_seconds", "corral_queue_stats_errors_total",
			"corral_share_slots_held", "corral_share_slots_cap", "corral_share_weight", "corral_share_turns_total",
			"corral_share_busy_seconds_total", "corral_share_busy_ratio", "corral_retry_budget_tokens")
		_, err = c.Close(bg)
		must(t, err)
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// compare checks the metrics of c named names against want, in the text exposition format,
// exactly.
func compare(t *testing.T, c *promcorral.Collector, want string, names ...string) {
	t.Helper()
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}
