package queue

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
)

// gaps runs one job on a consumer with policy p whose handler fails with
// fail(attempt) until it returns nil, and returns the time between the
// starts of its attempts. Handlers take no time, so each gap is exactly the
// redelivery delay chosen.
func gaps(t *testing.T, p backoff.Schedule, fail func(attempt int) error) []time.Duration {
	ctx := context.Background()
	acked := make(chan struct{})
	q, _ := New[int](context.Background(), WithHooks(Hooks{OnSuccess: func(context.Context, Event) { close(acked) }}))
	var starts []time.Time
	c, err := q.Consume(ctx, func(ctx context.Context, j Job[int]) error {
		starts = append(starts, time.Now())
		return fail(j.Attempt)
	}, WithWorkers(1), WithMaxAttempts(100), WithBackoff(p))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, 1); err != nil {
		t.Fatal(err)
	}
	<-acked
	if _, err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var gs []time.Duration
	for i := 1; i < len(starts); i++ {
		gs = append(gs, starts[i].Sub(starts[i-1]))
	}
	return gs
}

var errTest = errors.New("test failure")

// A server's hint (retry.After) replaces the backoff delay, clamped to the
// longer of the backoff's cap and one minute (retry's default MaxHint).
func TestConsumerClampsHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hints := []time.Duration{2 * time.Hour, 30 * time.Second, 0, -1}
		got := gaps(t, backoff.Constant(time.Second), func(attempt int) error {
			switch h := hints[attempt-1]; {
			case h > 0:
				return retry.After(errTest, h)
			case h == 0:
				return errTest // no hint: the backoff's delay
			}
			return nil
		})
		if want := []time.Duration{time.Minute, 30 * time.Second, time.Second}; !slices.Equal(got, want) {
			t.Errorf("cap 1s: delays %v, want %v", got, want)
		}
		got = gaps(t, backoff.Exponential(time.Second, 2, time.Hour), func(attempt int) error {
			if attempt == 1 {
				return retry.After(errTest, 100*time.Hour)
			}
			return nil
		})
		if want := []time.Duration{time.Hour}; !slices.Equal(got, want) {
			t.Errorf("cap 1h: delays %v, want %v", got, want)
		}
	})
}

// Decorrelated jitter draws each delay from the previous one. The consumer
// replays the policy's sequence, so with a seed the redelivery delays are
// exactly the policy's schedule (they used to restart from the base at each
// redelivery, so they never grew).
func TestConsumerDecorrelatedBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := backoff.Exponential(time.Second, 2, time.Hour,
			backoff.WithJitter(backoff.DecorrelatedJitter), backoff.WithSeed(7))
		got := gaps(t, p, func(attempt int) error {
			if attempt <= 6 {
				return errTest
			}
			return nil
		})
		if want := p.Delays(6); !slices.Equal(got, want) {
			t.Errorf("delays %v, want the schedule %v", got, want)
		}
	})
}
