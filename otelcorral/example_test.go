package otelcorral_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/corral-go/corral/otelcorral"
	"github.com/corral-go/corral/queue"
)

// A job enqueued inside a producer span is handled inside a consumer span of the same trace:
// the span's context travels in the job's headers. Here the providers record in memory; a
// program passes its exporting providers (or sets the global ones).
func Example() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	metrics := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(metrics))
	tel, err := otelcorral.New(otelcorral.WithTracerProvider(tp), otelcorral.WithMeterProvider(mp),
		otelcorral.WithPropagator(propagation.TraceContext{}))
	if err != nil {
		panic(err)
	}
	emails := tel.Queue("emails")
	q, err := queue.New[string](ctx, queue.WithHooks(emails.Hooks()))
	if err != nil {
		panic(err)
	}
	defer q.Close(ctx)

	if _, err := otelcorral.Enqueue(ctx, emails, q, "ada@example.com"); err != nil {
		panic(err)
	}
	c, err := q.Consume(ctx, otelcorral.Handler(emails, func(ctx context.Context, j queue.Job[string]) error {
		fmt.Println("handler: the job carries a traceparent header:", j.Headers["traceparent"] != "")
		return nil
	}))
	if err != nil {
		panic(err)
	}
	if _, err := c.Drain(ctx); err != nil {
		panic(err)
	}

	var send, process sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindProducer:
			send = s
		case trace.SpanKindConsumer:
			process = s
		}
	}
	fmt.Println(send.Name(), "->", process.Name())
	fmt.Println("same trace, child of the producer span:",
		process.Parent().SpanID() == send.SpanContext().SpanID() && process.SpanContext().TraceID() == send.SpanContext().TraceID())

	var rm metricdata.ResourceMetrics
	if err := metrics.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "corral.queue.succeeded" {
			fmt.Println(m.Name, m.Data.(metricdata.Sum[int64]).DataPoints[0].Value)
		}
	}
	// Output:
	// handler: the job carries a traceparent header: true
	// send emails -> process emails
	// same trace, child of the producer span: true
	// corral.queue.succeeded 1
}
