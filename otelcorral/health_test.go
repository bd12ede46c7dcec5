package otelcorral_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/corral-go/corral/otelcorral"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// flaky is an in-memory backend with the counts of a broker backend, whose Stats fails with
// ErrUnavailable while down is set.
type flaky struct {
	*memory.Backend
	down               atomic.Bool
	reconnects, losses atomic.Uint64
}

func (b *flaky) Stats(ctx context.Context) (driver.Stats, error) {
	if b.down.Load() {
		return driver.Stats{}, fmt.Errorf("broker gone: %w", queue.ErrUnavailable)
	}
	return b.Backend.Stats(ctx)
}

func (b *flaky) Reconnects() uint64 { return b.reconnects.Load() }
func (b *flaky) Losses() uint64     { return b.losses.Load() }

// ObserveQueue reports the backend's reconnections and losses from the queue's Health, as
// counters, at each collection; during an outage too, when depth and lag have no value, the
// error of Stats going to OpenTelemetry's error handler and the collection succeeding.
func TestObserveQueueBackendCounts(t *testing.T) {
	var handled []error
	defer otel.SetErrorHandler(otel.GetErrorHandler())
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { handled = append(handled, err) }))
	tel, reader, _ := providers(t)
	ctx := context.Background()
	b := &flaky{Backend: memory.New()}
	q, err := queue.New[string](ctx, queue.WithBackend(b))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	reg, err := otelcorral.ObserveQueue(tel.Queue("jobs"), q)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := reg.Unregister(); err != nil {
			t.Error(err)
		}
	}()
	exactly(t, "a new queue", collect(t, reader), points{
		"corral.queue.backend.reconnects{}": 0, "corral.queue.backend.losses{}": 0,
		"corral.queue.depth{corral.job.state=ready}": 0, "corral.queue.depth{corral.job.state=in_flight}": 0,
		"corral.queue.depth{corral.job.state=delayed}": 0, "corral.queue.depth{corral.job.state=dead}": 0,
		"corral.queue.lag{}": 0,
	})
	b.reconnects.Store(4)
	b.losses.Store(1)
	b.down.Store(true)
	exactly(t, "during an outage", collect(t, reader), points{
		"corral.queue.backend.reconnects{}": 4, "corral.queue.backend.losses{}": 1,
	})
	if len(handled) != 1 || !errors.Is(handled[0], queue.ErrUnavailable) {
		t.Errorf("error handler got %v; want the one Stats error", handled)
	}
}

// exactly checks that got holds exactly the points of want, none missing and none more.
func exactly(t *testing.T, what string, got, want points) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: %s = %v (reported: %v), want %v", what, k, g, ok, v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s = %v reported, want none", what, k, v)
		}
	}
}
