package queue_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// TestRateLimitBesideShare: a rate-limited consumer and an unlimited one share two workers;
// the limited one starts a job a minute exactly (its start is taken with a slot in hand, and
// the slot given back while it waits for the next), so the unlimited one runs its 20
// one-second jobs on both slots in 10 seconds.
func TestRateLimitBesideShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		slow, _ := queue.New[int](ctx)
		defer slow.Close(ctx)
		fast, _ := queue.New[int](ctx)
		defer fast.Close(ctx)
		for i := range 3 {
			_, _ = slow.Enqueue(ctx, i)
		}
		for i := range 20 {
			_, _ = fast.Enqueue(ctx, i)
		}
		start := time.Now()
		var (
			mu         sync.Mutex
			slowStarts []time.Duration
			fastEnd    time.Duration
			fastDone   int
		)
		sh := queue.NewShare(2, queue.Weighted)
		cs, err := slow.Consume(ctx, func(context.Context, queue.Job[int]) error {
			mu.Lock()
			slowStarts = append(slowStarts, time.Since(start))
			mu.Unlock()
			return nil
		}, queue.WithShare(sh, "slow", 1), queue.WithRateLimit(1, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		cf, err := fast.Consume(ctx, func(context.Context, queue.Job[int]) error {
			time.Sleep(time.Second) // the job's work
			mu.Lock()
			fastDone++
			fastEnd = time.Since(start)
			mu.Unlock()
			return nil
		}, queue.WithShare(sh, "fast", 1))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		_, _ = cs.Drain(ctx)
		_, _ = cf.Drain(ctx)
		mu.Lock()
		defer mu.Unlock()
		if fastDone != 20 || fastEnd != 10*time.Second {
			t.Errorf("unlimited consumer: %d jobs done, the last at %v; want 20 by 10s (both slots)", fastDone, fastEnd)
		}
		// Its first start waits for a slot if the other took both first (then 1s).
		if len(slowStarts) != 3 || slowStarts[0] > time.Second ||
			slowStarts[1] != slowStarts[0]+time.Minute || slowStarts[2] != slowStarts[0]+2*time.Minute {
			t.Errorf("limited consumer started at %v, want a minute apart from 0 or 1s", slowStarts)
		}
	})
}

// noRate hides the in-memory backend's rate limiter.
type noRate struct{ driver.Backend }

// TestRateLimitRefused: Consume with a rate limit on a backend that keeps none is an error;
// impossible limits panic.
func TestRateLimitRefused(t *testing.T) {
	ctx := context.Background()
	q, err := queue.New[int](ctx, queue.WithBackend(noRate{memory.New()}))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	_, err = q.Consume(ctx, func(context.Context, queue.Job[int]) error { return nil }, queue.WithRateLimit(1, time.Second))
	if err == nil || !strings.Contains(err.Error(), "keeps no rate limit") {
		t.Errorf("Consume with a rate limit on a backend without: %v", err)
	}
	for _, c := range []struct {
		n   int
		per time.Duration
	}{{0, time.Second}, {1, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("WithRateLimit(%d, %v) did not panic", c.n, c.per)
				}
			}()
			queue.WithRateLimit(c.n, c.per)
		}()
	}
}
