package bench

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alitto/pond/v2"
	"github.com/gammazero/workerpool"
	"github.com/panjf2000/ants/v2"
	concpool "github.com/sourcegraph/conc/pool"

	"github.com/corral-go/corral/pool"
)

// Every pool benchmark uses 8 workers and, where the pool has one, a queue of 1,024.
const (
	poolWorkers = 8
	poolQueue   = 1024
)

// submitter is one pool under test: submit hands it a no-op task that calls the done given to
// new, and stop waits for its goroutines.
type submitter struct {
	submit func()
	stop   func()
}

// poolImpls builds each pool under test. The task is made once, by new, so that the benchmark
// measures the pool, not the closure (and submitters running in parallel share it read-only).
var poolImpls = []struct {
	name string
	new  func(done func()) submitter
}{
	{"corral", func(d func()) submitter { return corralSubmitter(d) }},
	{"corral/timed", func(d func()) submitter { return corralSubmitter(d, pool.WithTimings()) }},
	{"baseline", func(d func()) submitter {
		// The physical limit: a buffered channel of funcs feeding fixed goroutines.
		ch := make(chan func(), poolQueue)
		var wg sync.WaitGroup
		for range poolWorkers {
			wg.Go(func() {
				for f := range ch {
					f()
				}
			})
		}
		return submitter{
			submit: func() { ch <- d },
			stop:   func() { close(ch); wg.Wait() },
		}
	}},
	{"pond", func(d func()) submitter {
		p := pond.NewPool(poolWorkers, pond.WithQueueSize(poolQueue))
		return submitter{
			submit: func() {
				if err := p.Go(d); err != nil {
					panic(err)
				}
			},
			stop: p.StopAndWait,
		}
	}},
	{"conc", func(d func()) submitter {
		p := concpool.New().WithMaxGoroutines(poolWorkers)
		return submitter{submit: func() { p.Go(d) }, stop: p.Wait}
	}},
	{"ants", func(d func()) submitter {
		p, err := ants.NewPool(poolWorkers)
		if err != nil {
			panic(err)
		}
		return submitter{
			submit: func() {
				if err := p.Submit(d); err != nil {
					panic(err)
				}
			},
			stop: func() {
				if err := p.ReleaseTimeout(10 * time.Second); err != nil {
					panic(err)
				}
			},
		}
	}},
	{"workerpool", func(d func()) submitter {
		p := workerpool.New(poolWorkers)
		return submitter{submit: func() { p.Submit(d) }, stop: p.StopWait}
	}},
}

// corralSubmitter is a corral pool of 8 workers and a queue of 1,024 with the Block policy.
func corralSubmitter(done func(), opts ...pool.Option) submitter {
	p := pool.New(poolWorkers, poolQueue, opts...)
	task := func(context.Context) error { done(); return nil }
	ctx := context.Background()
	return submitter{
		submit: func() {
			if err := p.Submit(ctx, task); err != nil {
				panic(err)
			}
		},
		stop: func() {
			if err := p.Close(context.Background()); err != nil {
				panic(err)
			}
		},
	}

}

// BenchmarkPoolSubmit measures the cost of one task: a single goroutine submits b.N no-op tasks
// and the timer stops once all of them have run.
func BenchmarkPoolSubmit(b *testing.B) {
	for _, impl := range poolImpls {
		b.Run(impl.name, func(b *testing.B) {
			var wg sync.WaitGroup
			s := impl.new(wg.Done)
			defer s.stop()
			// Warm up: start the workers and size the queue.
			wg.Add(poolQueue)
			for range poolQueue {
				s.submit()
			}
			wg.Wait()
			b.ReportAllocs()
			b.ResetTimer()
			wg.Add(b.N)
			for range b.N {
				s.submit()
			}
			wg.Wait()
			b.StopTimer()
		})
	}
}

// BenchmarkPoolContended is BenchmarkPoolSubmit with GOMAXPROCS submitters (b.RunParallel).
func BenchmarkPoolContended(b *testing.B) {
	for _, impl := range poolImpls {
		b.Run(impl.name, func(b *testing.B) {
			var pending atomic.Int64
			var wg sync.WaitGroup
			wg.Add(1)
			done := func() {
				if pending.Add(-1) == 0 {
					wg.Done()
				}
			}
			s := impl.new(done)
			defer s.stop()
			pending.Add(1) // held by the benchmark until every submitter is done
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					pending.Add(1)
					s.submit()
				}
			})
			done()
			wg.Wait()
			b.StopTimer()
		})
	}
}

// BenchmarkPoolMemory pushes n no-op tasks per op through 8 workers and a queue of 1,024 and
// reports the peak live heap seen during the first op (sampled every 100µs with
// runtime/metrics, above the heap after a GC just before it). For a bounded pool it must not
// grow with n. The other ops only time the run.
func BenchmarkPoolMemory(b *testing.B) {
	for _, impl := range poolImpls {
		if impl.name == "conc" || impl.name == "ants" {
			continue // no queue: their submitters block instead, as the baseline's do
		}
		for _, n := range []int{1_000, 1_000_000} {
			b.Run(impl.name+"/tasks="+strconv.Itoa(n), func(b *testing.B) {
				b.ReportAllocs()
				var peak uint64
				for i := range b.N {
					stopSampling := func() {}
					if i == 0 {
						b.StopTimer()
						runtime.GC()
						stopSampling = samplePeak(&peak, heapLive())
						b.StartTimer()
					}
					var wg sync.WaitGroup
					s := impl.new(wg.Done)
					wg.Add(n)
					for range n {
						s.submit()
					}
					wg.Wait()
					s.stop()
					b.StopTimer()
					stopSampling()
					b.StartTimer()
				}
				b.ReportMetric(float64(peak), "peak-heap-B")
			})
		}
	}
}

// heapSampler reads the live heap size without allocating.
type heapSampler []metrics.Sample

func newHeapSampler() heapSampler {
	return heapSampler{{Name: "/memory/classes/heap/objects:bytes"}}
}

func (s heapSampler) live() uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func heapLive() uint64 { return newHeapSampler().live() }

// samplePeak records in *peak the highest heap size above base until the returned func is
// called.
func samplePeak(peak *uint64, base uint64) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	s := newHeapSampler()
	record := func() {
		if h := s.live(); h > base && h-base > *peak {
			*peak = h - base
		}
	}
	wg.Go(func() {
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				record()
				return
			case <-t.C:
				record()
			}
		}
	})
	return func() { close(quit); wg.Wait() }
}

// BenchmarkPoolIO makes 1,000 calls with 1 ms of simulated latency each: baseline makes them
// one after another, corral on a pool of 64 workers. corral reports its speed-up over a
// sequential run measured once, before the timed loop.
func BenchmarkPoolIO(b *testing.B) {
	const calls, latency = 1000, time.Millisecond
	ioCall := func(ctx context.Context) error {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	sequential := func() {
		for range calls {
			_ = ioCall(context.Background())
		}
	}
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			sequential()
		}
	})
	b.Run("corral", func(b *testing.B) {
		start := time.Now()
		sequential()
		seq := time.Since(start)
		p := pool.New(64, calls)
		defer p.Close(context.Background())
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			g := p.Group(context.Background())
			for range calls {
				g.Go(ioCall)
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
		}
		perOp := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(float64(seq)/float64(perOp), "speedup-x")
	})
}
