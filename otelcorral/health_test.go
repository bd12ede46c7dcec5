package otelcorral_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

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
// counters, at each collection; during an outage too, when depth and lag have no value.
func TestObserveQueueBackendCounts(t *testing.T) {
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
	checkPoints(t, "a new queue", collect(t, reader), points{
		"corral.queue.backend.reconnects{}": 0, "corral.queue.backend.losses{}": 0,
		"corral.queue.depth{corral.job.state=ready}": 0,
	})
	b.reconnects.Store(4)
	b.losses.Store(1)
	b.down.Store(true)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("collection during an outage: %v, want the Stats error", err)
	}
	got := points{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range d.DataPoints {
					got[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			}
			if _, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == "corral.queue.depth" {
				t.Errorf("depth reported during an outage: %+v", m.Data)
			}
		}
	}
	checkPoints(t, "during an outage", got, points{"corral.queue.backend.reconnects{}": 4, "corral.queue.backend.losses{}": 1})
}
