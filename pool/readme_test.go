package pool_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

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
		return h.Wait(ctx)
	}()
	if err != nil || thumb != (Thumb{32}) || resized.Load() != 1 || dropped.Load() != 0 {
		t.Errorf("thumb %v, err %v, resized %d, dropped %d", thumb, err, resized.Load(), dropped.Load())
	}
}
