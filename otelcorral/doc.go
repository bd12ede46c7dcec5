// Package otelcorral reports corral's queues, pools and retry policies to OpenTelemetry:
// metrics through the hooks and Stats the core already has, and spans that follow a job from
// the producer that enqueued it to every handler run, in any process, through the job's
// headers (queue.WithHeaders).
//
//	tel, err := otelcorral.New() // the global providers; or WithMeterProvider, WithTracerProvider
//	emails := tel.Queue("emails")
//	q, err := queue.New[Email](ctx, queue.WithBackend(b), queue.WithHooks(emails.Hooks()))
//	reg, err := otelcorral.ObserveQueue(emails, q) // depth and lag
//	defer reg.Unregister()
//	id, err := otelcorral.Enqueue(ctx, emails, q, Email{To: "ada@example.com"}) // a producer span
//	c, err := q.Consume(ctx, otelcorral.Handler(emails, send))                  // a consumer span per run
//
// # Metrics
//
// Queue (every one with messaging.system "corral" and messaging.destination.name):
// corral.queue.enqueued, started, succeeded, retried, dead_lettered (by corral.dead.reason)
// and dropped, counters of jobs, from [Queue.Hooks]; corral.queue.run, the handler's duration
// by corral.job.outcome, from the hooks too; corral.queue.wait, from enqueue to the first run,
// from [Handler]; corral.queue.depth (by corral.job.state) and corral.queue.lag, observable
// gauges, and corral.queue.backend.reconnects and corral.queue.backend.losses, observable
// counters, read from the queue's Stats ([ObserveQueue]). Pool: [Telemetry.ObservePool]. Retry:
// [Telemetry.RetryHooks]. Durations are in seconds.
//
// # Spans
//
// [Enqueue] starts a producer span ("send <queue>") and writes its context into the job's
// headers with the propagator; [Handler] starts a consumer span ("process <queue>") for every
// handler run whose parent is that producer span, so that one trace holds the request that
// enqueued a job and every attempt to handle it, on whichever backend and in whichever
// process. The attributes follow OpenTelemetry's messaging semantic conventions
// (messaging.system, messaging.destination.name, messaging.operation.type and name,
// messaging.message.id), with corral.job.attempt and corral.job.outcome beside them. The
// producer and the consumers must use the same propagator (W3C trace context by default once
// otel.SetTextMapPropagator is set, as the README shows).
//
// Everything here is safe for concurrent use.
package otelcorral

// Where things are: otelcorral.go holds Telemetry, New and the options; queue.go the queue
// metrics (Queue, Hooks, ObserveQueue) and the attribute keys; trace.go the spans (Enqueue,
// Handler); pool.go ObservePool; retry.go RetryHooks.
