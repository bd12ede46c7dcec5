package acrossprocesses_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/corral-go/corral/internal/brokertest"
	"github.com/corral-go/corral/otelcorral"
	"github.com/corral-go/corral/queue"
)

// A trace crosses two processes over each broker backend: this process enqueues two jobs
// inside producer spans, a worker process (the test binary run again) handles them, the job
// "retry" twice, and writes its consumer spans back; each is in its job's producer's trace,
// the child of the producer span, and was recorded by the other process.
func TestTraceAcrossProcesses(t *testing.T) {
	for _, b := range []struct {
		name  string
		start func(*testing.T) string
	}{{"jetstream", brokertest.StartNATS}, {"postgres", brokertest.StartPostgres}, {"redis", brokertest.StartRedis}} {
		t.Run(b.name, func(t *testing.T) { traceAcross(t, b.name, b.start(t)) })
	}
}

func traceAcross(t *testing.T, backend, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tel, err := otelcorral.New(otelcorral.WithTracerProvider(tp), otelcorral.WithPropagator(propagation.TraceContext{}))
	if err != nil {
		t.Fatal(err)
	}
	const name = "traced"
	b, closeConn, err := openBackend(ctx, backend, addr, name)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	q, err := queue.New[string](ctx, queue.WithBackend(b))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(context.Background())
	producers := map[string]string{} // job ID -> payload
	for _, p := range []string{"ok", "retry"} {
		id, err := otelcorral.Enqueue(ctx, tel.Queue(name), q, p)
		if err != nil {
			t.Fatal(err)
		}
		producers[id] = p
	}
	sent := map[string]sdktrace.ReadOnlySpan{} // by job ID
	for _, s := range rec.Ended() {
		sent[attr(s, "messaging.message.id")] = s
	}

	out := filepath.Join(t.TempDir(), "spans.json")
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envBackend+"="+backend, envAddr+"="+addr, envQueue+"="+name, envOut+"="+out, envRuns+"=3")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("worker process: %v\n%s", err, stderr.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []spanRecord
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, s := range got {
		p, ok := sent[s.JobID]
		if !ok {
			t.Errorf("consumer span of job %s, which was not enqueued here", s.JobID)
			continue
		}
		if s.PID == os.Getpid() {
			t.Errorf("consumer span recorded by this process, want the worker's")
		}
		if s.Trace != p.SpanContext().TraceID().String() || s.Parent != p.SpanContext().SpanID().String() {
			t.Errorf("job %s: consumer span in trace %s with parent %s; want the producer's trace %s and span %s",
				s.JobID, s.Trace, s.Parent, p.SpanContext().TraceID(), p.SpanContext().SpanID())
		}
		runs[fmt.Sprintf("%s#%s=%s", producers[s.JobID], s.Attempt, s.Outcome)]++
	}
	want := map[string]int{"ok#1=success": 1, "retry#1=error": 1, "retry#2=success": 1}
	if fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Errorf("consumer spans (payload#attempt=outcome) %v, want %v", runs, want)
	}
	if len(sent) != 2 || sent[keyOf(producers, "ok")].SpanContext().TraceID() == sent[keyOf(producers, "retry")].SpanContext().TraceID() {
		t.Errorf("producer spans %v: want two, in two traces", sent)
	}
}

func keyOf(m map[string]string, v string) string {
	for k, x := range m {
		if x == v {
			return k
		}
	}
	return ""
}
