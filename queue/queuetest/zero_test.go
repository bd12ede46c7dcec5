package queuetest_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
	"github.com/corral-go/corral/queue/queuetest"
)

// recorder is a testing.TB that keeps what a kit reports instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// guarded is a backend whose zero value is not usable: every method panics with "guarded:
// zero Backend" at once, except Receive, which checks its lease first, as the backends did.
type guarded struct{ b *memory.Backend }

const zeroSays = "guarded: zero Backend: use guarded.New"

func (g *guarded) made() {
	if g.b == nil {
		panic(zeroSays)
	}
}

func (g *guarded) Open(ctx context.Context, cfg driver.Config) error {
	g.made()
	return g.b.Open(ctx, cfg)
}
func (g *guarded) Enqueue(ctx context.Context, m driver.Message) (driver.EnqueueResult, error) {
	g.made()
	return g.b.Enqueue(ctx, m)
}
func (g *guarded) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	if lease <= 0 {
		return fmt.Errorf("guarded: lease %v must be positive", lease)
	}
	g.made()
	return g.b.Receive(ctx, lease, d)
}
func (g *guarded) Start(ctx context.Context, d *driver.Delivery) error {
	g.made()
	return g.b.Start(ctx, d)
}
func (g *guarded) Extend(ctx context.Context, d *driver.Delivery, lease time.Duration) error {
	g.made()
	return g.b.Extend(ctx, d, lease)
}
func (g *guarded) Ack(ctx context.Context, d *driver.Delivery) error {
	g.made()
	return g.b.Ack(ctx, d)
}
func (g *guarded) Nack(ctx context.Context, d *driver.Delivery, delay time.Duration, a driver.Attempt) error {
	g.made()
	return g.b.Nack(ctx, d, delay, a)
}
func (g *guarded) Release(ctx context.Context, d *driver.Delivery, delay time.Duration) error {
	g.made()
	return g.b.Release(ctx, d, delay)
}
func (g *guarded) Bury(ctx context.Context, d *driver.Delivery, r driver.Reason, a driver.Attempt) (driver.BuryResult, error) {
	g.made()
	return g.b.Bury(ctx, d, r, a)
}
func (g *guarded) DeadLetters(ctx context.Context) iter.Seq2[driver.DeadMessage, error] {
	g.made()
	return g.b.DeadLetters(ctx)
}
func (g *guarded) Redrive(ctx context.Context, id string) error {
	g.made()
	return g.b.Redrive(ctx, id)
}
func (g *guarded) Purge(ctx context.Context, id string) error { g.made(); return g.b.Purge(ctx, id) }
func (g *guarded) Stats(ctx context.Context) (driver.Stats, error) {
	g.made()
	return g.b.Stats(ctx)
}
func (g *guarded) Close(ctx context.Context) error { g.made(); return g.b.Close(ctx) }

// Forgotten is a method of the backend's own that no test names.
func (g *guarded) Forgotten() int { return 0 }

// RunZeroBackend fails for a method that checks its arguments before its zero value, for an
// exported method it neither calls nor is told of, and for a name in extra it calls itself;
// told of every method, on a backend that checks its zero value first, it passes.
func TestRunZeroBackendCatchesDefects(t *testing.T) {
	r := &recorder{TB: t}
	queuetest.RunZeroBackend(r, new(guarded), zeroSays, map[string]func(){"Stats": func() {}})
	slices.Sort(r.errs)
	want := []string{
		"Forgotten of *queuetest_test.guarded is not checked: name it in extra",
		`Receive(lease 0) of a zero Backend: panic "", want one containing "` + zeroSays + `"`,
		`Stats of a zero Backend: panic "", want one containing "` + zeroSays + `"`,
		"extra names Stats, which RunZeroBackend calls itself",
	}
	if !slices.Equal(r.errs, want) {
		t.Errorf("RunZeroBackend reported\n%s\nwant\n%s", strings.Join(r.errs, "\n"), strings.Join(want, "\n"))
	}
}
