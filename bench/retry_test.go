package bench

import (
	"context"
	"errors"
	"testing"

	retrygo "github.com/avast/retry-go/v4"
	cenkalti "github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
)

var (
	errRetryBench = errors.New("transient")
	retrySink     error
)

// okOp is called through a variable so that no implementation, the baseline included, can
// inline it: every row pays for one indirect call.
var okOp = func(context.Context) error { return nil }

// Each implementation is configured once, outside the loop, the way a hot path would use it:
// 3 attempts, no delay between them.

// BenchmarkRetrySuccess measures a call whose first attempt succeeds: the cost a retry
// wrapper adds to every healthy call. baseline is the direct call.
func BenchmarkRetrySuccess(b *testing.B) {
	ctx := context.Background()
	b.Run("corral", func(b *testing.B) {
		p := retry.New(retry.WithMaxAttempts(3), retry.WithBackoff(backoff.Constant(0)))
		b.ReportAllocs()
		for b.Loop() {
			retrySink = retry.Do(ctx, p, okOp)
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			retrySink = okOp(ctx)
		}
	})
	b.Run("cenkalti", func(b *testing.B) {
		op := func() (struct{}, error) { return struct{}{}, okOp(ctx) }
		opts := []cenkalti.RetryOption{cenkalti.WithBackOff(&cenkalti.ZeroBackOff{}), cenkalti.WithMaxTries(3)}
		b.ReportAllocs()
		for b.Loop() {
			_, retrySink = cenkalti.Retry(ctx, op, opts...)
		}
	})
	b.Run("retrygo", func(b *testing.B) {
		op := func() error { return okOp(ctx) }
		opts := []retrygo.Option{retrygo.Attempts(3), retrygo.Delay(0), retrygo.DelayType(retrygo.FixedDelay), retrygo.Context(ctx)}
		b.ReportAllocs()
		for b.Loop() {
			retrySink = retrygo.Do(op, opts...)
		}
	})
	b.Run("failsafe", func(b *testing.B) {
		op := func() error { return okOp(ctx) }
		ex := failsafe.With(retrypolicy.NewBuilder[any]().WithMaxAttempts(3).Build())
		b.ReportAllocs()
		for b.Loop() {
			retrySink = ex.Run(op)
		}
	})
}

// flaky fails twice, then succeeds, then starts over: every call sees two failures.
type flaky struct{ n int }

func (f *flaky) call() error {
	f.n++
	if f.n%3 != 0 {
		return errRetryBench
	}
	return nil
}

// BenchmarkRetryTwoFailures measures a call that fails twice and succeeds on the third
// attempt, with zero delay: the cost of the retry machinery itself.
func BenchmarkRetryTwoFailures(b *testing.B) {
	ctx := context.Background()
	b.Run("corral", func(b *testing.B) {
		f := &flaky{}
		op := func(context.Context) error { return f.call() }
		p := retry.New(retry.WithMaxAttempts(3), retry.WithBackoff(backoff.Constant(0)))
		b.ReportAllocs()
		for b.Loop() {
			if retrySink = retry.Do(ctx, p, op); retrySink != nil {
				b.Fatal(retrySink)
			}
		}
	})
	b.Run("cenkalti", func(b *testing.B) {
		f := &flaky{}
		op := func() (struct{}, error) { return struct{}{}, f.call() }
		opts := []cenkalti.RetryOption{cenkalti.WithBackOff(&cenkalti.ZeroBackOff{}), cenkalti.WithMaxTries(3)}
		b.ReportAllocs()
		for b.Loop() {
			if _, retrySink = cenkalti.Retry(ctx, op, opts...); retrySink != nil {
				b.Fatal(retrySink)
			}
		}
	})
	b.Run("retrygo", func(b *testing.B) {
		f := &flaky{}
		opts := []retrygo.Option{retrygo.Attempts(3), retrygo.Delay(0), retrygo.DelayType(retrygo.FixedDelay), retrygo.Context(ctx)}
		b.ReportAllocs()
		for b.Loop() {
			if retrySink = retrygo.Do(f.call, opts...); retrySink != nil {
				b.Fatal(retrySink)
			}
		}
	})
	b.Run("failsafe", func(b *testing.B) {
		f := &flaky{}
		ex := failsafe.With(retrypolicy.NewBuilder[any]().WithMaxAttempts(3).Build())
		b.ReportAllocs()
		for b.Loop() {
			if retrySink = ex.Run(f.call); retrySink != nil {
				b.Fatal(retrySink)
			}
		}
	})
}
