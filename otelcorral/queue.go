package otelcorral

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/corral-go/corral/queue"
)

// Attribute keys of corral's own, beside the messaging semantic conventions.
const (
	// ReasonKey is why a job was dead-lettered (queue.Reason), on corral.queue.dead_lettered.
	ReasonKey = attribute.Key("corral.dead.reason")
	// OutcomeKey is how a handler run ended: "success", "retry" or "dead" on
	// corral.queue.run; "success", "error" or "panic" on a consumer span.
	OutcomeKey = attribute.Key("corral.job.outcome")
	// AttemptKey is the handler run's number (queue.Job.Attempt), on a consumer span.
	AttemptKey = attribute.Key("corral.job.attempt")
	// StateKey is the state of the jobs corral.queue.depth counts: "ready", "in_flight",
	// "delayed" or "dead".
	StateKey = attribute.Key("corral.job.state")
)

// system is the messaging.system of every queue metric and span.
var system = semconv.MessagingSystemKey.String("corral")

// queueInstruments are the queue metrics, shared by every Queue of a Telemetry.
type queueInstruments struct {
	enqueued, started, succeeded, retried, dead, dropped metric.Int64Counter
	wait, run                                            metric.Float64Histogram
	depth                                                metric.Int64ObservableGauge
	lag                                                  metric.Float64ObservableGauge
	reconnects, losses                                   metric.Int64ObservableCounter
}

func (qi *queueInstruments) init(m metric.Meter) error {
	var errs [12]error
	counter := func(i int, name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit("{job}"), metric.WithDescription(desc))
		errs[i] = err
		return c
	}
	qi.enqueued = counter(0, "corral.queue.enqueued", "Jobs stored by Enqueue or Redrive.")
	qi.started = counter(1, "corral.queue.started", "Handler runs started.")
	qi.succeeded = counter(2, "corral.queue.succeeded", "Jobs acked after their handler returned nil.")
	qi.retried = counter(3, "corral.queue.retried", "Failed handler runs whose job was scheduled again.")
	qi.dead = counter(4, "corral.queue.dead_lettered", "Jobs moved to the dead letters, by reason.")
	qi.dropped = counter(5, "corral.queue.dropped", "Jobs refused by DropNewest at capacity.")
	qi.wait, errs[6] = seconds(m, "corral.queue.wait", "Time from a job's enqueue to the start of its first handler run.")
	qi.run, errs[7] = seconds(m, "corral.queue.run", "Duration of handler runs, by outcome.")
	qi.depth, errs[8] = m.Int64ObservableGauge("corral.queue.depth", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs stored in the queue's backend, by state."))
	qi.lag, errs[9] = m.Float64ObservableGauge("corral.queue.lag", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest stored job."))
	qi.reconnects, errs[10] = m.Int64ObservableCounter("corral.queue.backend.reconnects", metric.WithUnit("{reconnect}"),
		metric.WithDescription("Times the backend re-established its connection to the broker (0 for a backend that keeps none)."))
	qi.losses, errs[11] = m.Int64ObservableCounter("corral.queue.backend.losses", metric.WithUnit("{loss}"),
		metric.WithDescription("Times this process's backend found that the broker had lost what it stored for the queue (its jobs, if it had any, dead letters and leases); 0 for a backend that cannot tell."))
	return firstErr(errs[:])
}

// seconds creates a histogram of durations in seconds.
func seconds(m metric.Meter, name, desc string) (metric.Float64Histogram, error) {
	return m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc))
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Queue reports on one queue: its metrics through [Queue.Hooks], [Handler] and
// [ObserveQueue], its spans through [Enqueue] and [Handler]. Every metric carries
// messaging.system "corral" and messaging.destination.name, the queue's name. A Queue is safe
// for concurrent use.
type Queue struct {
	t    *Telemetry
	name string
	at   metric.MeasurementOption // system and destination
}

// Queue returns the reporter of the queue called name (the messaging.destination.name of its
// metrics and spans). Processes that share a queue should give it the same name.
func (t *Telemetry) Queue(name string) *Queue {
	return &Queue{t: t, name: name,
		at: metric.WithAttributeSet(attribute.NewSet(system, semconv.MessagingDestinationName(name)))}
}

// Hooks returns the queue hooks that count its jobs: corral.queue.enqueued (OnEnqueue),
// started (OnStart), succeeded (OnSuccess), retried (OnRetry), dead_lettered (OnDead, with
// corral.dead.reason) and dropped (OnDrop), and record corral.queue.run, the handler's
// duration, for every run that ended in a success, a retry or a dead letter (reason attempts,
// permanent or panic), with corral.job.outcome. Give them to queue.New with queue.WithHooks
// in every process that enqueues or consumes. The hooks do not block and do not panic.
func (q *Queue) Hooks() queue.Hooks {
	qi := &q.t.q
	return queue.Hooks{
		OnEnqueue: func(ctx context.Context, _ queue.Event) { qi.enqueued.Add(ctx, 1, q.at) },
		OnStart:   func(ctx context.Context, _ queue.Event) { qi.started.Add(ctx, 1, q.at) },
		OnSuccess: func(ctx context.Context, e queue.Event) {
			qi.succeeded.Add(ctx, 1, q.at)
			q.recordRun(ctx, e.Duration, "success")
		},
		OnRetry: func(ctx context.Context, e queue.Event) {
			qi.retried.Add(ctx, 1, q.at)
			q.recordRun(ctx, e.Duration, "retry")
		},
		OnDead: func(ctx context.Context, e queue.Event) {
			qi.dead.Add(ctx, 1, q.at, metric.WithAttributes(ReasonKey.String(string(e.Reason))))
			switch e.Reason {
			case queue.ReasonAttempts, queue.ReasonPermanent, queue.ReasonPanic:
				q.recordRun(ctx, e.Duration, "dead")
			}
		},
		OnDrop: func(ctx context.Context, _ queue.Event) { qi.dropped.Add(ctx, 1, q.at) },
	}
}

func (q *Queue) recordRun(ctx context.Context, d time.Duration, outcome string) {
	q.t.q.run.Record(ctx, d.Seconds(), q.at, metric.WithAttributes(OutcomeKey.String(outcome)))
}

// ObserveQueue reports from's Stats as corral.queue.depth (jobs stored, by corral.job.state:
// ready, in_flight, delayed, dead) and corral.queue.lag (the age of the oldest stored job, in
// seconds), and the counts of its Health as corral.queue.backend.reconnects and
// corral.queue.backend.losses (see queue.Health), read once per collection of the meter
// provider's readers, with the collection's context. With a broker backend, Stats asks the
// broker: each collection is a round trip. During an outage a collection gives the error of
// Stats to OpenTelemetry's error handler (otel.Handle) and reports the two counts but no
// depth or lag; the collection itself succeeds, so that the provider's other metrics are
// exported all the same (a reader whose collection fails, such as the periodic one, exports
// nothing). Unregister the returned Registration before the queue is closed.
func ObserveQueue[T any](q *Queue, from *queue.Queue[T]) (metric.Registration, error) {
	qi := &q.t.q
	return q.t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		s, err := from.Stats(ctx) // with its Health even if it fails
		o.ObserveInt64(qi.reconnects, int64(s.Health.Reconnects), q.at)
		o.ObserveInt64(qi.losses, int64(s.Health.Losses), q.at)
		if err != nil {
			otel.Handle(err)
			return nil
		}
		for _, g := range [...]struct {
			state string
			n     int
		}{{"ready", s.Ready}, {"in_flight", s.InFlight}, {"delayed", s.Delayed}, {"dead", s.Dead}} {
			o.ObserveInt64(qi.depth, int64(g.n), q.at, metric.WithAttributes(StateKey.String(g.state)))
		}
		o.ObserveFloat64(qi.lag, s.Lag.Seconds(), q.at)
		return nil
	}, qi.depth, qi.lag, qi.reconnects, qi.losses)
}
