package otelcorral_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/otelcorral"
	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// providers returns a Telemetry that reports to a manual metric reader and a span recorder.
func providers(t *testing.T) (*otelcorral.Telemetry, *sdkmetric.ManualReader, *tracetest.SpanRecorder) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	tel, err := otelcorral.New(otelcorral.WithMeterProvider(mp), otelcorral.WithTracerProvider(tp),
		otelcorral.WithPropagator(propagation.TraceContext{}))
	if err != nil {
		t.Fatal(err)
	}
	return tel, reader, rec
}

// point is one data point: a metric's name and its attributes but the queue's, with its value
// (a sum or gauge's value, a histogram's count).
type points map[string]float64

func collect(t *testing.T, r *sdkmetric.ManualReader) points {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := points{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)+" count"] = float64(p.Count)
				}
			default:
				t.Fatalf("metric %s of type %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// key is name{k=v,...} with the attributes but messaging.system and
// messaging.destination.name, which key checks are those of the queue "jobs" if present.
func key(name string, set attribute.Set) string {
	var kv []string
	for _, a := range set.ToSlice() {
		switch a.Key {
		case "messaging.system":
			if a.Value.AsString() != "corral" {
				kv = append(kv, "system="+a.Value.AsString())
			}
		case "messaging.destination.name":
			if a.Value.AsString() != "jobs" {
				kv = append(kv, "queue="+a.Value.AsString())
			}
		default:
			kv = append(kv, string(a.Key)+"="+a.Value.String())
		}
	}
	sort.Strings(kv)
	return name + "{" + strings.Join(kv, ",") + "}"
}

func checkPoints(t *testing.T, what string, got, want points) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %v, want %v", what, k, got[k], v)
		}
	}
}

var errBoom = errors.New("boom")

// A scripted workload on a queue: 7 jobs stored and 1 dropped at capacity; 3 succeed at once,
// 1 after a retry, 1 fails all 3 attempts, 1 panics, 1 fails permanently. Every counter,
// histogram count, gauge and span is checked exactly.
func TestQueueWorkload(t *testing.T) {
	tel, reader, rec := providers(t)
	ctx := context.Background()
	jobs := tel.Queue("jobs")
	hooks := jobs.Hooks()
	settled := make(chan string, 16)
	onSuccess, onDead := hooks.OnSuccess, hooks.OnDead
	hooks.OnSuccess = func(ctx context.Context, e queue.Event) { onSuccess(ctx, e); settled <- e.ID }
	hooks.OnDead = func(ctx context.Context, e queue.Event) { onDead(ctx, e); settled <- e.ID }
	q, err := queue.New[string](ctx, queue.WithHooks(hooks), queue.WithCapacity(7), queue.WithOverflow(queue.DropNewest))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	reg, err := otelcorral.ObserveQueue(jobs, q)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	payloads := []string{"ok", "ok", "ok", "flaky", "doomed", "poison", "perm"}
	ids := map[string]string{} // job ID -> payload
	for _, p := range payloads {
		id, err := otelcorral.Enqueue(ctx, jobs, q, p)
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = p
	}
	if _, err := otelcorral.Enqueue(ctx, jobs, q, "extra"); !errors.Is(err, queue.ErrDropped) {
		t.Fatalf("Enqueue at capacity: %v, want ErrDropped", err)
	}
	checkPoints(t, "before consuming", collect(t, reader), points{
		"corral.queue.enqueued{}": 7, "corral.queue.dropped{}": 1,
		"corral.queue.depth{corral.job.state=ready}": 7, "corral.queue.depth{corral.job.state=dead}": 0,
	})

	c, err := q.Consume(ctx, otelcorral.Handler(jobs, func(ctx context.Context, j queue.Job[string]) error {
		if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
			t.Errorf("job %s: handler ctx without a span", j.ID)
		}
		switch j.Payload {
		case "flaky":
			if j.Attempt == 1 {
				return errBoom
			}
		case "doomed":
			return errBoom
		case "poison":
			panic("poisoned")
		case "perm":
			return retry.Permanent(errBoom)
		}
		return nil
	}), queue.WithWorkers(1), queue.WithMaxAttempts(3), queue.WithBackoff(backoff.Constant(time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	for range payloads {
		select {
		case <-settled:
		case <-time.After(30 * time.Second):
			t.Fatal("jobs not settled within 30s")
		}
	}
	if _, err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkPoints(t, "after the workload", collect(t, reader), points{
		"corral.queue.enqueued{}": 7, "corral.queue.dropped{}": 1,
		"corral.queue.started{}": 10, "corral.queue.succeeded{}": 4, "corral.queue.retried{}": 3,
		"corral.queue.dead_lettered{corral.dead.reason=attempts}":  1,
		"corral.queue.dead_lettered{corral.dead.reason=panic}":     1,
		"corral.queue.dead_lettered{corral.dead.reason=permanent}": 1,
		"corral.queue.run{corral.job.outcome=success} count":       4,
		"corral.queue.run{corral.job.outcome=retry} count":         3,
		"corral.queue.run{corral.job.outcome=dead} count":          3,
		"corral.queue.wait{} count":                                7,
		"corral.queue.depth{corral.job.state=ready}":               0,
		"corral.queue.depth{corral.job.state=in_flight}":           0,
		"corral.queue.depth{corral.job.state=delayed}":             0,
		"corral.queue.depth{corral.job.state=dead}":                3,
		"corral.queue.lag{}":                                       0,
	})
	checkSpans(t, rec.Ended(), ids)
}

// checkSpans checks the spans of TestQueueWorkload: a producer span per Enqueue (8, the
// dropped one with an error status), and a consumer span per handler run, each the child of
// its job's producer span, with its attempt and outcome.
func checkSpans(t *testing.T, spans []sdktrace.ReadOnlySpan, ids map[string]string) {
	t.Helper()
	producers := map[string]sdktrace.ReadOnlySpan{} // by job ID
	var consumers []sdktrace.ReadOnlySpan
	dropped := 0
	for _, s := range spans {
		switch s.SpanKind() {
		case trace.SpanKindProducer:
			id := attr(s, "messaging.message.id")
			if s.Status().Description != "" {
				dropped++
				continue
			}
			if s.Name() != "send jobs" || attr(s, "messaging.operation.type") != "send" {
				t.Errorf("producer span %q, operation %q", s.Name(), attr(s, "messaging.operation.type"))
			}
			producers[id] = s
		case trace.SpanKindConsumer:
			consumers = append(consumers, s)
		}
	}
	if len(producers) != 7 || dropped != 1 {
		t.Errorf("%d producer spans of stored jobs and %d with an error, want 7 and 1", len(producers), dropped)
	}
	outcomes := map[string]int{}
	for _, s := range consumers {
		id := attr(s, "messaging.message.id")
		p, ok := producers[id]
		if !ok {
			t.Errorf("consumer span of job %s without a producer span", id)
			continue
		}
		if s.Parent().SpanID() != p.SpanContext().SpanID() || s.SpanContext().TraceID() != p.SpanContext().TraceID() {
			t.Errorf("job %s: consumer span's parent %v, want the producer span %v", id, s.Parent(), p.SpanContext())
		}
		if s.Name() != "process jobs" || attr(s, "messaging.destination.name") != "jobs" {
			t.Errorf("consumer span %q of destination %q", s.Name(), attr(s, "messaging.destination.name"))
		}
		outcomes[fmt.Sprintf("%s#%s=%s", ids[id], attr(s, "corral.job.attempt"), attr(s, "corral.job.outcome"))]++
	}
	want := map[string]int{"ok#1=success": 3, "flaky#1=error": 1, "flaky#2=success": 1, "doomed#1=error": 1,
		"doomed#2=error": 1, "doomed#3=error": 1, "poison#1=panic": 1, "perm#1=error": 1}
	if fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Errorf("consumer spans (payload#attempt=outcome) %v, want %v", outcomes, want)
	}
}

func attr(s sdktrace.ReadOnlySpan, k string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == k {
			return a.Value.String()
		}
	}
	return ""
}

// A pool's Stats and a retry policy's retries, exactly.
func TestPoolAndRetry(t *testing.T) {
	tel, reader, _ := providers(t)
	ctx := context.Background()
	p := pool.New(1, 8)
	reg, err := tel.ObservePool("workers", p)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	for _, f := range []func(context.Context) error{
		func(context.Context) error { return nil },
		func(context.Context) error { return nil },
		func(context.Context) error { return errBoom },
		func(context.Context) error { panic("task panic") },
	} {
		if err := p.Submit(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	pol := retry.New(retry.WithMaxAttempts(4), retry.WithBackoff(backoff.Constant(time.Millisecond)),
		retry.WithHooks(tel.RetryHooks("fetch")))
	calls := 0
	if err := retry.Do(ctx, pol, func(context.Context) error {
		calls++
		if calls < 3 {
			return errBoom
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	checkPoints(t, "pool and retry", collect(t, reader), points{
		"corral.pool.submitted{corral.name=workers}":                             4,
		"corral.pool.started{corral.name=workers}":                               4,
		"corral.pool.finished{corral.job.outcome=completed,corral.name=workers}": 2,
		"corral.pool.finished{corral.job.outcome=failed,corral.name=workers}":    1,
		"corral.pool.finished{corral.job.outcome=panicked,corral.name=workers}":  1,
		"corral.pool.dropped{corral.dead.reason=shutdown,corral.name=workers}":   0,
		"corral.pool.running{corral.name=workers}":                               0,
		"corral.pool.queued{corral.name=workers}":                                0,
		"corral.retry.retries{corral.name=fetch}":                                2,
		"corral.retry.delay{corral.name=fetch} count":                            2,
		"corral.retry.attempt{corral.name=fetch} count":                          2,
	})
}
