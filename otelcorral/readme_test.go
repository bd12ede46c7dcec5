package otelcorral_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/corral-go/corral/internal/readmetest"
	"github.com/corral-go/corral/otelcorral"
	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/memory"
	"github.com/corral-go/corral/retry"
)

// The snippet of otelcorral/README.md, as written there, with stubs for what it calls: it
// reports to the global providers, which the test sets and then restores.
func TestREADMESnippet(t *testing.T) {
	type Email struct{ To string }
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	oldTP, oldMP, oldProp := otel.GetTracerProvider(), otel.GetMeterProvider(), otel.GetTextMapPropagator()
	defer func() {
		otel.SetTracerProvider(oldTP)
		otel.SetMeterProvider(oldMP)
		otel.SetTextMapPropagator(oldProp)
	}()
	handled := make(chan string, 1)
	send := func(ctx context.Context, j queue.Job[Email]) error { handled <- j.Payload.To; return nil }
	p := pool.New(1, 1)
	defer p.Close(ctx)

	b := memory.New()

	err := func() error {
		// Once, at start-up, with the providers your program exports through (OTLP, stdout, ...).
		otel.SetTracerProvider(tp)
		otel.SetMeterProvider(mp)
		otel.SetTextMapPropagator(propagation.TraceContext{}) // the same in every process

		tel, err := otelcorral.New() // the global providers; or WithTracerProvider, WithMeterProvider
		if err != nil {
			return err
		}
		emails := tel.Queue("emails")
		q, err := queue.New[Email](ctx, queue.WithBackend(b), queue.WithHooks(emails.Hooks()))
		if err != nil {
			return err
		}
		defer q.Close(ctx)
		reg, err := otelcorral.ObserveQueue(emails, q) // depth and lag, read at each collection
		if err != nil {
			return err
		}
		defer reg.Unregister()

		// Producer: a "send emails" span, whose context goes into the job's headers.
		id, err := otelcorral.Enqueue(ctx, emails, q, Email{To: "ada@example.com"})
		if err != nil {
			return err
		}
		if id == "" {
			return errors.New("enqueue: no job ID")
		}

		// Consumer, in any process: a "process emails" span per handler run, child of the producer's.
		c, err := q.Consume(ctx, otelcorral.Handler(emails, send))
		if err != nil {
			return err
		}
		if to := <-handled; to != "ada@example.com" {
			t.Errorf("handled %q", to)
		}
		if _, err := c.Close(ctx); err != nil {
			return err
		}

		// Pools and retry policies.
		preg, err := tel.ObservePool("thumbnails", p)
		if err != nil {
			return err
		}
		defer preg.Unregister()
		pol := retry.New(retry.WithMaxAttempts(5), retry.WithHooks(tel.RetryHooks("payments-api")))
		return retry.Do(ctx, pol, func(context.Context) error { return nil })
	}()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 2 {
		t.Errorf("%d spans ended, want 2 (send, process)", n)
	}
	checkPoints(t, "README", collect(t, reader), points{
		"corral.queue.enqueued{queue=emails}": 1, "corral.queue.succeeded{queue=emails}": 1,
		"corral.pool.submitted{corral.name=thumbnails}": 0,
	})
}

// README.md's snippets are the ones the tests above run (see internal/readmetest).
func TestREADMEInStep(t *testing.T) {
	readmetest.Check(t, "README.md", []string{"readme_test.go"})
}
