package pool_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/latency"
	"github.com/corral-go/corral/pool"
)

// The README's pool snippet, as written there, with stubs for what it calls.
func TestREADMESnippet(t *testing.T) {
	type Thumb struct{ size int }
	var dropped atomic.Int64
	var resized atomic.Int64
	resize := func(context.Context) error { resized.Add(1); return nil }
	img := 64
	render := func(_ context.Context, img int) (Thumb, error) { return Thumb{img / 2}, nil }
	ctx := context.Background()
	shutdownCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	thumb, err := func() (Thumb, error) {
		p := pool.New(8, 1024, // 8 workers, 1,024 queued tasks at most
			pool.WithOverflow(pool.DropOldest),
			pool.WithHooks(pool.Hooks{OnDrop: func(ctx context.Context, e pool.DropEvent) { dropped.Add(1) }}))
		defer p.Close(shutdownCtx) // drains; at the deadline cancels and reports the abandoned

		if err := p.Submit(ctx, resize); errors.Is(err, pool.ErrClosed) {
			return Thumb{}, err
		}
		h, _ := pool.Call(ctx, p, func(ctx context.Context) (Thumb, error) { return render(ctx, img) })
		thumb, err := h.Wait(ctx)
		return thumb, err
	}()
	if err != nil || thumb != (Thumb{32}) || resized.Load() != 1 || dropped.Load() != 0 {
		t.Errorf("thumb %v, err %v, resized %d, dropped %d", thumb, err, resized.Load(), dropped.Load())
	}
}

// The README's snippet that reads percentiles from a timed pool's Stats, as written there: 80
// tasks of 10ms on 8 workers end 10ms, 20ms, ..., 100ms after their submit, 8 of each.
func TestREADMETimingsSnippet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shutdownCtx := context.Background()
		var printed string
		sprintf := fmt.Sprintf
		fmt := struct{ Printf func(string, ...any) }{func(f string, args ...any) { printed = sprintf(f, args...) }}

		p := pool.New(8, 1024, pool.WithTimings())
		defer p.Close(shutdownCtx)
		// ... submit tasks ...
		for range 80 {
			mustSubmit(t, p, bg, func(context.Context) error { time.Sleep(10 * time.Millisecond); return nil })
		}
		time.Sleep(time.Second) // every task has finished
		s := p.Stats()
		e2e := s.EndToEnd // also s.Wait and s.Run
		fmt.Printf("%d tasks: p50 %v, p95 %v, p99 %v, max %v\n",
			e2e.Count, e2e.Quantile(0.50), e2e.Quantile(0.95), e2e.Quantile(0.99), e2e.Max)

		var want latency.Histogram
		for k := range 80 {
			want.Record(time.Duration(k/8+1) * 10 * time.Millisecond)
		}
		if e2e != want {
			t.Errorf("end-to-end times: %d, sum %v, max %v; want %d, sum %v, max %v",
				e2e.Count, e2e.Sum, e2e.Max, want.Count, want.Sum, want.Max)
		}
		// Exact: 50ms, 100ms, 100ms. 50ms is in the bucket [11·2^22ns, 12·2^22ns), read as its
		// middle; 100ms in [11·2^23ns, 12·2^23ns); p99 is the 80th of 80, Max.
		if w := "80 tasks: p50 48.234496ms, p95 96.468992ms, p99 100ms, max 100ms\n"; printed != w {
			t.Errorf("printed %q, want %q", printed, w)
		}
	})
}
