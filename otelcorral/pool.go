package otelcorral

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/corral-go/corral/pool"
)

// ObservePool reports p's Stats, read once per collection of the meter provider's readers
// (pool.Stats does no I/O), with corral.name name on every metric:
//
//   - corral.pool.submitted, corral.pool.started and corral.pool.rejected:
//     monotonic counts of tasks (Stats.Submitted, Started, Rejected);
//   - corral.pool.finished: tasks that ran, by corral.job.outcome "completed", "failed" or
//     "panicked";
//   - corral.pool.dropped: tasks dropped, by corral.dead.reason "refused", "evicted" or
//     "shutdown";
//   - corral.pool.running, corral.pool.queued and corral.pool.workers: gauges.
//
// The distributions of wait and run times are in Stats.Wait and Stats.Run (of a sample of the
// tasks, or of every task with pool.WithTimings);
// OpenTelemetry has no asynchronous histogram to report them through. Unregister the
// returned Registration when the pool is closed.
func (t *Telemetry) ObservePool(name string, p *pool.Pool) (metric.Registration, error) {
	m := t.meter
	var errs [8]error
	counter := func(i int, name, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit("{task}"), metric.WithDescription(desc))
		errs[i] = err
		return c
	}
	gauge := func(i int, name, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit("{task}"), metric.WithDescription(desc))
		errs[i] = err
		return g
	}
	submitted := counter(0, "corral.pool.submitted", "Tasks passed to Submit, Call and Group.Go.")
	started := counter(1, "corral.pool.started", "Tasks that began to run.")
	finished := counter(2, "corral.pool.finished", "Tasks that ran, by outcome.")
	rejected := counter(3, "corral.pool.rejected", "Tasks not accepted.")
	dropped := counter(4, "corral.pool.dropped", "Tasks accepted or offered, then dropped, by reason.")
	running := gauge(5, "corral.pool.running", "Tasks running now.")
	queued := gauge(6, "corral.pool.queued", "Tasks waiting in the pool's queue now.")
	workers := gauge(7, "corral.pool.workers", "Worker goroutines now.")
	if err := firstErr(errs[:]); err != nil {
		return nil, err
	}
	at := metric.WithAttributeSet(attribute.NewSet(NameKey.String(name)))
	with := func(k attribute.Key, v string) metric.ObserveOption {
		return metric.WithAttributes(k.String(v))
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := p.Stats()
		o.ObserveInt64(submitted, int64(s.Submitted), at)
		o.ObserveInt64(started, int64(s.Started), at)
		o.ObserveInt64(finished, int64(s.Completed), at, with(OutcomeKey, "completed"))
		o.ObserveInt64(finished, int64(s.Failed), at, with(OutcomeKey, "failed"))
		o.ObserveInt64(finished, int64(s.Panicked), at, with(OutcomeKey, "panicked"))
		o.ObserveInt64(rejected, int64(s.Rejected), at)
		o.ObserveInt64(dropped, int64(s.Dropped.Refused), at, with(ReasonKey, "refused"))
		o.ObserveInt64(dropped, int64(s.Dropped.Evicted), at, with(ReasonKey, "evicted"))
		o.ObserveInt64(dropped, int64(s.Dropped.Shutdown), at, with(ReasonKey, "shutdown"))
		o.ObserveInt64(running, int64(s.Running), at)
		o.ObserveInt64(queued, int64(s.Queued), at)
		o.ObserveInt64(workers, int64(s.Workers), at)
		return nil
	}, submitted, started, finished, rejected, dropped, running, queued, workers)
}
