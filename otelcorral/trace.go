package otelcorral

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/corral-go/corral/queue"
)

// Enqueue enqueues payload on to as to.Enqueue does, inside a producer span named "send"
// and the queue's name, whose context it writes into the job's headers (queue.WithHeaders,
// after opts: the propagator's keys, traceparent and tracestate for W3C trace context,
// replace any of opts' headers of the same key). The span has the messaging attributes
// messaging.system "corral", messaging.destination.name, messaging.operation.type "send"
// and messaging.message.id (the job's ID, once known), and the error of a failed Enqueue as
// its status. It is a child of ctx's span, if any; it ends before Enqueue returns.
func Enqueue[T any](ctx context.Context, q *Queue, to *queue.Queue[T], payload T, opts ...queue.EnqueueOption) (string, error) {
	ctx, span := q.t.tracer.Start(ctx, "send "+q.name, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(system, semconv.MessagingDestinationName(q.name), semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("send")))
	defer span.End()
	carrier := propagation.MapCarrier{}
	q.t.prop.Inject(ctx, carrier)
	opts = append(opts[:len(opts):len(opts)], queue.WithHeaders(carrier))
	id, err := to.Enqueue(ctx, payload, opts...)
	if id != "" {
		span.SetAttributes(semconv.MessagingMessageID(id))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return id, err
}

// Handler returns h wrapped in a consumer span per handler run, named "process" and the
// queue's name, whose parent is the span whose context the job's headers carry (a job
// enqueued with [Enqueue], in any process), or ctx's span if they carry none. The span has
// messaging.system, messaging.destination.name, messaging.operation.type "process",
// messaging.message.id, corral.job.attempt and corral.job.outcome: "success" if h returned
// nil, "error" (with the error as the span's status) if it returned one, "panic" if it
// panicked or called runtime.Goexit (which the wrapper lets through, unchanged, to the
// queue). h gets the span in its ctx. On a job's first run (Attempt 1) the wrapper records
// corral.queue.wait, the time since the job's EnqueuedAt.
func Handler[T any](q *Queue, h queue.Handler[T]) queue.Handler[T] {
	if h == nil {
		panic("otelcorral: Handler with a nil handler")
	}
	return func(ctx context.Context, j queue.Job[T]) error {
		if j.Attempt == 1 {
			q.t.q.wait.Record(ctx, time.Since(j.EnqueuedAt).Seconds(), q.at)
		}
		parent := q.t.prop.Extract(ctx, propagation.MapCarrier(j.Headers))
		ctx, span := q.t.tracer.Start(parent, "process "+q.name, trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(system, semconv.MessagingDestinationName(q.name), semconv.MessagingOperationTypeProcess,
				semconv.MessagingOperationName("process"), semconv.MessagingMessageID(j.ID), AttemptKey.Int(j.Attempt)))
		returned := false
		defer func() {
			if returned {
				return
			}
			// A panic or runtime.Goexit: recorded, then let through to the queue.
			v := recover()
			if v == nil {
				endSpan(span, "panic", errGoexit)
				return
			}
			endSpan(span, "panic", fmt.Errorf("handler panicked: %v", v))
			panic(v)
		}()
		err := h(ctx, j)
		returned = true
		if err != nil {
			endSpan(span, "error", err)
		} else {
			endSpan(span, "success", nil)
		}
		return err
	}
}

var errGoexit = errors.New("otelcorral: handler called runtime.Goexit")

// endSpan sets span's outcome and status, and ends it.
func endSpan(span trace.Span, outcome string, err error) {
	span.SetAttributes(OutcomeKey.String(outcome))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
