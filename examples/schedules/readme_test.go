package main

import (
	"context"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/corral-go/corral/queue"
)

// The README's "Jobs in time" snippet, as written there: a standard cron spec is a
// queue.Schedule, with the catch-up and jitter options.
func TestREADMESnippet(t *testing.T) {
	type Rollup struct{ Until time.Time }
	ctx := context.Background()
	q, err := queue.New[Rollup](ctx, queue.WithDedupHorizon(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)

	spec, err := cron.ParseStandard("0 * * * *") // github.com/robfig/cron/v3: corral imports none
	if err != nil {
		t.Fatal(err)
	}
	p, err := q.Periodic("hourly-rollup", spec, func(tick time.Time) Rollup { return Rollup{Until: tick} },
		queue.WithCatchUp(1),            // after downtime, run the latest missed tick (default: skip them)
		queue.WithJitter(5*time.Minute)) // the same delay for a tick in every process
	if err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if next := st.Next; next.Minute() != 0 || next.Second() != 0 || st.NextAt.Sub(next) >= 5*time.Minute || st.NextAt.Before(next) {
		t.Errorf("Stats %+v: want the next hour, enqueued within 5 minutes of it", st)
	}
	p.Stop()
}
