package bench

import (
	"context"
	"sync"
	"testing"

	"github.com/sourcegraph/conc/pool"
	"golang.org/x/sync/errgroup"

	"github.com/corral-go/corral/scope"
)

// scopeWork is the task every scope benchmark runs: no work, so that the numbers are the cost
// of starting, running and joining a task.
func scopeWork(context.Context) error { return nil }

// BenchmarkScopeGo measures one unbounded task: start, run, join. b.N tasks share one scope.
func BenchmarkScopeGo(b *testing.B) {
	ctx := context.Background()
	b.Run("corral", func(b *testing.B) {
		b.ReportAllocs()
		_ = scope.Run(ctx, func(s *scope.Scope) error {
			for range b.N {
				s.Go(scopeWork)
			}
			return nil
		})
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		var wg sync.WaitGroup
		for range b.N {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = scopeWork(ctx)
			}()
		}
		wg.Wait()
	})
	b.Run("errgroup", func(b *testing.B) {
		b.ReportAllocs()
		g, gctx := errgroup.WithContext(ctx)
		for range b.N {
			g.Go(func() error { return scopeWork(gctx) })
		}
		_ = g.Wait()
	})
	b.Run("conc", func(b *testing.B) {
		b.ReportAllocs()
		p := pool.New().WithContext(ctx)
		for range b.N {
			p.Go(scopeWork)
		}
		_ = p.Wait()
	})
}

// BenchmarkScopeLimit8 measures one task under a limit of 8 concurrent tasks.
func BenchmarkScopeLimit8(b *testing.B) {
	ctx := context.Background()
	b.Run("corral", func(b *testing.B) {
		b.ReportAllocs()
		_ = scope.Run(ctx, func(s *scope.Scope) error {
			for range b.N {
				s.Go(scopeWork)
			}
			return nil
		}, scope.WithLimit(8))
	})
	b.Run("baseline", func(b *testing.B) {
		// The physical limit: a buffered channel feeding 8 goroutines.
		b.ReportAllocs()
		work := make(chan func(context.Context) error, 8)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for f := range work {
					_ = f(ctx)
				}
			}()
		}
		for range b.N {
			work <- scopeWork
		}
		close(work)
		wg.Wait()
	})
	b.Run("errgroup", func(b *testing.B) {
		b.ReportAllocs()
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for range b.N {
			g.Go(func() error { return scopeWork(gctx) })
		}
		_ = g.Wait()
	})
	b.Run("conc", func(b *testing.B) {
		b.ReportAllocs()
		p := pool.New().WithMaxGoroutines(8).WithContext(ctx)
		for range b.N {
			p.Go(scopeWork)
		}
		_ = p.Wait()
	})
}

// BenchmarkScopeCancel measures the time from cancelling the parent context of 10,000 tasks
// blocked on ctx.Done() to the moment their owner has joined them all (one op = 10,000 tasks).
func BenchmarkScopeCancel(b *testing.B) {
	const tasks = 10_000
	blocked := func(ctx context.Context, ready *sync.WaitGroup) error {
		ready.Done()
		<-ctx.Done()
		return ctx.Err()
	}
	b.Run("corral", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			ctx, cancel := context.WithCancel(context.Background())
			var ready sync.WaitGroup
			ready.Add(tasks)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = scope.Run(ctx, func(s *scope.Scope) error {
					for range tasks {
						s.Go(func(ctx context.Context) error { return blocked(ctx, &ready) })
					}
					return nil
				})
			}()
			ready.Wait()
			b.StartTimer()
			cancel()
			<-done
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			ctx, cancel := context.WithCancel(context.Background())
			var ready, wg sync.WaitGroup
			ready.Add(tasks)
			for range tasks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_ = blocked(ctx, &ready)
				}()
			}
			ready.Wait()
			b.StartTimer()
			cancel()
			wg.Wait()
		}
	})
}
