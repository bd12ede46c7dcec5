package retry_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/retry"
)

type callKey struct{}

// Each hook receives the context of the call it reports on: the ctx given to Do or DoValue,
// not an attempt's (here each attempt has a context of its own, WithAttemptTimeout's), so that
// one Policy shared by concurrent calls tells them apart.
func TestHooksReceiveTheCallsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		retried := map[any][]context.Context{}
		gaveUp := map[any][]context.Context{}
		p := retry.New(retry.WithMaxAttempts(3), noJitter(10*ms), retry.WithAttemptTimeout(time.Second),
			retry.WithHooks(retry.Hooks{
				OnRetry: func(ctx context.Context, e retry.RetryEvent) {
					mu.Lock()
					defer mu.Unlock()
					retried[ctx.Value(callKey{})] = append(retried[ctx.Value(callKey{})], ctx)
				},
				OnGiveUp: func(ctx context.Context, e *retry.Error) {
					mu.Lock()
					defer mu.Unlock()
					gaveUp[ctx.Value(callKey{})] = append(gaveUp[ctx.Value(callKey{})], ctx)
				},
			}))
		ctxs := map[string]context.Context{}
		var wg sync.WaitGroup
		for _, id := range []string{"a", "b", "c"} {
			ctx := context.WithValue(t.Context(), callKey{}, id)
			ctxs[id] = ctx
			wg.Go(func() {
				if id == "c" {
					_, _ = retry.DoValue(ctx, p, func(context.Context) (int, error) { return 0, errA })
					return
				}
				calls := 0
				_ = retry.Do(ctx, p, func(actx context.Context) error {
					check(t, actx != ctx, "an attempt has a context of its own")
					if calls++; id == "a" && calls == 2 {
						return nil // a succeeds on its second attempt
					}
					return errA
				})
			})
		}
		wg.Wait()
		equal(t, 3, len(retried), "calls that retried")
		equal(t, []context.Context{ctxs["a"]}, retried["a"])
		equal(t, []context.Context{ctxs["b"], ctxs["b"]}, retried["b"])
		equal(t, []context.Context{ctxs["c"], ctxs["c"]}, retried["c"])
		equal(t, 2, len(gaveUp), "calls that gave up")
		equal(t, []context.Context{ctxs["b"]}, gaveUp["b"])
		equal(t, []context.Context{ctxs["c"]}, gaveUp["c"])
	})
}

// A RetryEvent says how long the failed attempt ran, as well as which it was, its error and
// the delay chosen.
func TestRetryEventDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []retry.RetryEvent
		p := retry.New(retry.WithMaxAttempts(4), noJitter(100*ms),
			onRetry(func(e retry.RetryEvent) { events = append(events, e) }))
		runs := []time.Duration{30 * ms, 0, 2 * time.Second, 5 * ms}
		errs := []error{errA, errB, errC, nil}
		n := 0
		err := retry.Do(t.Context(), p, func(context.Context) error {
			time.Sleep(runs[n])
			n++
			return errs[n-1]
		})
		equal(t, nil, err)
		equal(t, []retry.RetryEvent{
			{Attempt: 1, Err: errA, Delay: 100 * ms, Duration: 30 * ms},
			{Attempt: 2, Err: errB, Delay: 100 * ms, Duration: 0},
			{Attempt: 3, Err: errC, Delay: 100 * ms, Duration: 2 * time.Second},
		}, events)
	})
}

// LogValue is a group of the event's non-zero fields, so that one slog call logs it.
func TestRetryEventLogValue(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	logger.Info("retrying", "event", retry.RetryEvent{Attempt: 3, Err: errA, Delay: 2 * time.Second, Duration: 1500 * ms})
	logger.Info("retrying", "event", retry.RetryEvent{Attempt: 1, Err: errB})
	logger.Info("retrying", "event", retry.RetryEvent{})
	equal(t, `{"level":"INFO","msg":"retrying","event":{"attempt":3,"err":"a","delay":2000000000,"duration":1500000000}}
{"level":"INFO","msg":"retrying","event":{"attempt":1,"err":"b"}}
{"level":"INFO","msg":"retrying"}
`, buf.String())
}

// A later WithHooks replaces an earlier one whole: its nil fields unset the earlier's.
func TestWithHooksReplacesEarlierHooks(t *testing.T) {
	var first, second []string
	p := retry.New(
		retry.WithHooks(retry.Hooks{
			OnRetry:  func(context.Context, retry.RetryEvent) { first = append(first, "retry") },
			OnGiveUp: func(context.Context, *retry.Error) { first = append(first, "give up") },
		}),
		noJitter(0),
		retry.WithHooks(retry.Hooks{OnGiveUp: func(context.Context, *retry.Error) { second = append(second, "give up") }}),
	)
	_ = retry.Do(context.Background(), p, func(context.Context) error { return errA })
	equal(t, []string(nil), first)
	equal(t, []string{"give up"}, second)
}
