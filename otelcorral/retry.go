package otelcorral

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/corral-go/corral/retry"
)

// NameKey names the pool or retry policy a metric is about (the name given to
// [Telemetry.ObservePool] or [Telemetry.RetryHooks]).
const NameKey = attribute.Key("corral.name")

type retryInstruments struct {
	retries metric.Int64Counter
	delay   metric.Float64Histogram
	failed  metric.Float64Histogram
}

func (ri *retryInstruments) init(m metric.Meter) error {
	var errs [3]error
	ri.retries, errs[0] = m.Int64Counter("corral.retry.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Failed attempts that will be retried."))
	ri.delay, errs[1] = seconds(m, "corral.retry.delay", "Delay chosen before the next attempt.")
	ri.failed, errs[2] = seconds(m, "corral.retry.attempt", "Duration of the failed attempts that will be retried.")
	return firstErr(errs[:])
}

// RetryHooks returns the retry hooks that report the retries of a policy called name:
// corral.retry.retries counts them, corral.retry.delay records the delay chosen before each
// and corral.retry.attempt how long the failed attempt ran, each with corral.name. Give them
// to retry.New with retry.WithHooks. The hooks do not block and do not panic.
func (t *Telemetry) RetryHooks(name string) retry.Hooks {
	at := metric.WithAttributeSet(attribute.NewSet(NameKey.String(name)))
	return retry.Hooks{OnRetry: func(ctx context.Context, e retry.RetryEvent) {
		t.r.retries.Add(ctx, 1, at)
		t.r.delay.Record(ctx, e.Delay.Seconds(), at)
		t.r.failed.Record(ctx, e.Duration.Seconds(), at)
	}}
}
