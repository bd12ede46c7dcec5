package acrossprocesses_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/otelcorral"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/postgres"
	"github.com/corral-go/corral/queue/redis"
)

// The environment of a worker process of TestTraceAcrossProcesses: the test binary run again,
// which TestMain turns into a consumer instead of running the tests.
const (
	envBackend = "CORRAL_OTELCORRAL_WORKER" // jetstream, postgres or redis
	envAddr    = "CORRAL_OTELCORRAL_ADDR"   // the server's URL, DSN or address
	envQueue   = "CORRAL_OTELCORRAL_QUEUE"  // the queue's name
	envOut     = "CORRAL_OTELCORRAL_OUT"    // the file the worker writes its spans to
	envRuns    = "CORRAL_OTELCORRAL_RUNS"   // how many handler runs to wait for
)

// spanRecord is a consumer span as a worker writes it back.
type spanRecord struct {
	PID     int
	Trace   string
	Span    string
	Parent  string
	JobID   string
	Attempt string
	Outcome string
}

// openBackend connects to a server of the named backend and returns a backend for queue name,
// and what closes the connection once the queue is closed.
func openBackend(ctx context.Context, backend, addr, name string) (driver.Backend, func(), error) {
	switch backend {
	case "jetstream":
		nc, err := nats.Connect(addr)
		if err != nil {
			return nil, nil, err
		}
		js, err := natsjs.New(nc)
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		return jetstream.New(js, name), nc.Close, nil
	case "postgres":
		pool, err := pgxpool.New(ctx, addr)
		if err != nil {
			return nil, nil, err
		}
		if err := postgres.Migrate(ctx, pool); err != nil {
			pool.Close()
			return nil, nil, err
		}
		return postgres.New(pool, name), pool.Close, nil
	case "redis":
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		return redis.New(c, name), func() { _ = c.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown backend %q", backend)
}

// serveWorker runs the worker and exits if this process is one (its environment names a
// backend), and returns otherwise.
func serveWorker() {
	backend := os.Getenv(envBackend)
	if backend == "" {
		return
	}
	if err := work(backend); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// work consumes the queue until it has run the handler the number of times asked, with a
// consumer span per run recorded, then writes those spans to the output file. The handler
// fails the first run of the job "retry".
func work(backend string) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var runs int
	if _, err := fmt.Sscan(os.Getenv(envRuns), &runs); err != nil {
		return fmt.Errorf("%s: %w", envRuns, err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tel, err := otelcorral.New(otelcorral.WithTracerProvider(tp), otelcorral.WithPropagator(propagation.TraceContext{}))
	if err != nil {
		return err
	}
	name := os.Getenv(envQueue)
	b, closeConn, err := openBackend(ctx, backend, os.Getenv(envAddr), name)
	if err != nil {
		return err
	}
	defer closeConn()
	q, err := queue.New[string](ctx, queue.WithBackend(b))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, q.Close(context.Background())) }()
	ran := make(chan struct{}, runs)
	h := otelcorral.Handler(tel.Queue(name), func(ctx context.Context, j queue.Job[string]) error {
		if j.Payload == "retry" && j.Attempt == 1 {
			return errors.New("first run fails")
		}
		return nil
	})
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		err := h(ctx, j) // the run's span has ended when h returns
		ran <- struct{}{}
		return err
	}, queue.WithWorkers(1), queue.WithBackoff(backoff.Constant(time.Millisecond)))
	if err != nil {
		return err
	}
	for range runs {
		select {
		case <-ran:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if _, err := c.Close(ctx); err != nil {
		return err
	}
	return writeSpans(os.Getenv(envOut), rec.Ended())
}

func writeSpans(path string, spans []sdktrace.ReadOnlySpan) error {
	var out []spanRecord
	for _, s := range spans {
		if s.SpanKind() != trace.SpanKindConsumer {
			continue
		}
		out = append(out, spanRecord{PID: os.Getpid(), Trace: s.SpanContext().TraceID().String(),
			Span: s.SpanContext().SpanID().String(), Parent: s.Parent().SpanID().String(),
			JobID: attr(s, "messaging.message.id"), Attempt: attr(s, "corral.job.attempt"),
			Outcome: attr(s, "corral.job.outcome")})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
