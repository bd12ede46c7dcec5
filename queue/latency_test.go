package queue

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/internal/logtest"
	"github.com/corral-go/corral/internal/sample"
	"github.com/corral-go/corral/latency"
)

// histograms returns the Histograms of the durations given.
func histograms(ds ...time.Duration) latency.Histogram {
	var h latency.Histogram
	for _, d := range ds {
		h.Record(d)
	}
	return h
}

// Stats.Wait, Run and EndToEnd hold the exact durations of every handler
// run, on the virtual clock: a delayed job's wait counts from its
// NotBefore, an immediate one's from its enqueue, a failed run and its
// retry are both recorded (the retry's wait from the same enqueue), and so
// is a run that panicked.
func TestStatsLatencyExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		q, _ := New[string](ctx, WithTimings())
		runs := map[string]time.Duration{"delayed": 2 * time.Second, "now": 500 * time.Millisecond,
			"flaky": 3 * time.Second, "boom": time.Second}
		var (
			mu    sync.Mutex
			tries = map[string]int{}
		)
		enqueueOK(t, q, "delayed", WithDelay(3*time.Second))
		time.Sleep(7 * time.Second) // "delayed" is due at 3s: it waits 4s for a consumer
		c, err := q.Consume(ctx, func(ctx context.Context, j Job[string]) error {
			time.Sleep(runs[j.Payload])
			mu.Lock()
			defer mu.Unlock()
			tries[j.Payload]++
			if j.Payload == "flaky" && tries[j.Payload] == 1 {
				return errors.New("flaky")
			}
			if j.Payload == "boom" {
				panic("boom")
			}
			return nil
		}, WithWorkers(1), WithBackoff(backoff.Constant(10*time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // "delayed" runs for 2s
		time.Sleep(time.Minute)
		enqueueOK(t, q, "now") // starts at once, runs 0.5s
		time.Sleep(time.Minute)
		enqueueOK(t, q, "flaky") // runs 3s, fails, comes back 10s later, runs 3s
		time.Sleep(time.Minute)
		enqueueOK(t, q, "boom") // runs 1s and panics: dead-lettered
		time.Sleep(time.Minute)
		if _, err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
		s, _ := q.Stats(ctx)
		wantWait := histograms(4*time.Second, 0, 0, 13*time.Second, 0)
		wantRun := histograms(2*time.Second, 500*time.Millisecond, 3*time.Second, 3*time.Second, time.Second)
		wantTotal := histograms(6*time.Second, 500*time.Millisecond, 3*time.Second, 16*time.Second, time.Second)
		for _, x := range []struct {
			name      string
			got, want latency.Histogram
		}{{"Wait", s.Wait, wantWait}, {"Run", s.Run, wantRun}, {"EndToEnd", s.EndToEnd, wantTotal}} {
			if x.got != x.want {
				t.Errorf("%s: count %d sum %v max %v; want count %d sum %v max %v (or other buckets)",
					x.name, x.got.Count, x.got.Sum, x.got.Max, x.want.Count, x.want.Sum, x.want.Max)
			}
		}
		if s.Acked != 3 || s.Retried != 1 || s.DeadLettered[ReasonPanic] != 1 {
			t.Errorf("acked %d, retried %d, dead %v; want 3, 1 and 1 panic", s.Acked, s.Retried, s.DeadLettered)
		}
	})
}

// Many workers of several consumers record at once: every run is in the
// three histograms once, whole (run with -race -count=200).
func TestStatsLatencyConcurrent(t *testing.T) {
	ctx := context.Background()
	q, _ := New[int](ctx, WithTimings())
	const jobs = 500
	var wg sync.WaitGroup
	wg.Add(jobs)
	h := func(ctx context.Context, j Job[int]) error {
		defer wg.Done()
		if j.Payload%7 == 0 {
			time.Sleep(time.Microsecond * time.Duration(j.Payload))
		}
		return nil
	}
	var cs []*Consumer[int]
	for range 3 {
		c, err := q.Consume(ctx, h, WithWorkers(4))
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	var enq sync.WaitGroup
	for p := range 2 {
		enq.Go(func() {
			for i := p; i < jobs; i += 2 {
				if _, err := q.Enqueue(ctx, i); err != nil {
					t.Error(err)
				}
			}
		})
	}
	enq.Wait()
	wg.Wait()
	for _, c := range cs {
		if _, err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := q.Stats(ctx)
	for name, hg := range map[string]latency.Histogram{"Wait": s.Wait, "Run": s.Run, "EndToEnd": s.EndToEnd} {
		var n uint64
		for _, k := range hg.Counts {
			n += k
		}
		if hg.Count != jobs || n != jobs {
			t.Errorf("%s: Count %d, buckets %d; want %d", name, hg.Count, n, jobs)
		}
	}
	if s.EndToEnd.Sum != s.Wait.Sum+s.Run.Sum {
		t.Errorf("EndToEnd.Sum %v != Wait.Sum %v + Run.Sum %v", s.EndToEnd.Sum, s.Wait.Sum, s.Run.Sum)
	}
	if s.Run.Sum < 7*time.Microsecond*(7+14+21) { // some of the sleeps, at least
		t.Errorf("Run.Sum %v: the handlers' sleeps are missing", s.Run.Sum)
	}
}

// An OnSuccess, OnRetry or OnDead hook times every run as WithTimings does.
func TestStatsLatencyTimed(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		runs uint64
	}{
		{"WithTimings", []Option{WithTimings()}, 2},
		{"OnSuccess", []Option{WithHooks(Hooks{OnSuccess: func(context.Context, Event) {}})}, 2},
		{"OnRetry", []Option{WithHooks(Hooks{OnRetry: func(context.Context, Event) {}})}, 2},
		{"OnDead", []Option{WithHooks(Hooks{OnDead: func(context.Context, Event) {}})}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				q, _ := New[string](ctx, tc.opts...)
				enqueueOK(t, q, "a")
				enqueueOK(t, q, "b")
				time.Sleep(time.Second)
				c, _ := q.Consume(ctx, func(ctx context.Context, j Job[string]) error {
					time.Sleep(time.Minute)
					return nil
				}, WithWorkers(1))
				if _, err := c.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				s, _ := q.Stats(ctx)
				if s.Acked != 2 {
					t.Fatalf("acked %d; want 2", s.Acked)
				}
				want := histograms(time.Second, time.Second+time.Minute)
				if s.Wait != want {
					t.Errorf("Wait: count %d sum %v; want count %d sum %v", s.Wait.Count, s.Wait.Sum, want.Count, want.Sum)
				}
				if s.Run.Count != tc.runs || s.EndToEnd.Count != tc.runs || s.Run.Sum != 2*time.Minute {
					t.Errorf("Run: count %d sum %v, EndToEnd count %d; want %d runs of 1m", s.Run.Count, s.Run.Sum, s.EndToEnd.Count, tc.runs)
				}
			})
		})
	}
}

// Without WithTimings (an OnStart hook does not time runs), a worker times
// a sample of its runs, and the histograms hold exactly those: here 150
// jobs of 100ms each through one worker, so that the k-th (from 0) waits
// 1s + k*100ms. The events carry no duration: the logger's
// records of the successes have none.
func TestStatsLatencySampled(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"untimed", nil},
		{"OnStart", []Option{WithHooks(Hooks{OnStart: func(context.Context, Event) {}})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n, unit = 150, 100 * time.Millisecond
				ctx := context.Background()
				var log bytes.Buffer
				q, _ := New[string](ctx, append(tc.opts, WithLogger(logtest.Text(&log, slog.LevelDebug)))...)
				for range n {
					enqueueOK(t, q, "x")
				}
				time.Sleep(time.Second)
				c, _ := q.Consume(ctx, func(ctx context.Context, j Job[string]) error {
					time.Sleep(unit)
					return nil
				}, WithWorkers(1))
				if _, err := c.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				var (
					sampler sample.Sampler
					waits   []time.Duration
				)
				for k := range n {
					if sampler.Take() {
						waits = append(waits, time.Second+time.Duration(k)*unit)
					}
				}
				if len(waits) < 2 || len(waits) > n/8 {
					t.Fatalf("the sampler picks %d of %d runs: not a sample", len(waits), n)
				}
				s, _ := q.Stats(ctx)
				if s.Acked != n {
					t.Fatalf("acked %d; want %d", s.Acked, n)
				}
				if want := histograms(waits...); s.Wait != want {
					t.Errorf("Wait: count %d sum %v; want count %d sum %v", s.Wait.Count, s.Wait.Sum, want.Count, want.Sum)
				}
				runs := uint64(len(waits))
				if s.Run.Count != runs || s.EndToEnd.Count != runs || s.Run.Sum != time.Duration(runs)*unit {
					t.Errorf("Run: count %d sum %v, EndToEnd count %d; want %d runs of %v", s.Run.Count, s.Run.Sum, s.EndToEnd.Count, runs, unit)
				}
				ok, timed := strings.Count(log.String(), "job succeeded"), strings.Count(log.String(), "duration=")
				if ok != n || timed != 0 {
					t.Errorf("log: %d successes, %d records with a duration; want %d and none", ok, timed, n)
				}
			})
		})
	}
}

// A job the worker takes as it acks the one before (the in-memory fast
// path) is timed from that one's end, without a clock reading of its own:
// its wait and run are exact all the same. With an OnStart hook, which the
// run must not count, or a Share, whose jobs wait for a slot after they
// were taken, each start is read from the clock.
func TestStatsLatencyChained(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []Option
		copts   []ConsumerOption
		onStart time.Duration // how long OnStart takes
		eopts   []EnqueueOption
	}{
		{"chained", nil, nil, 0, nil},
		{"OnStart", []Option{WithHooks(Hooks{OnStart: func(context.Context, Event) { time.Sleep(time.Second) }})}, nil, time.Second, nil},
		// A consumer of a Share has a second loop per worker, waiting for a slot with a job in
		// hand, so the order of its jobs is the ordering key's.
		{"Share", nil, []ConsumerOption{WithShare(NewShare(1, Weighted), "c", 1)}, 0, []EnqueueOption{WithKey("k")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				q, _ := New[time.Duration](ctx, append(tc.opts, WithTimings())...)
				for _, d := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
					if _, err := q.Enqueue(ctx, d, tc.eopts...); err != nil {
						t.Fatal(err)
					}
				}
				c, err := q.Consume(ctx, func(_ context.Context, j Job[time.Duration]) error {
					time.Sleep(j.Payload)
					return nil
				}, append(tc.copts, WithWorkers(1))...)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Minute)
				if _, err := c.Close(ctx); err != nil {
					t.Fatal(err)
				}
				s, _ := q.Stats(ctx)
				h := tc.onStart
				wantWait := histograms(h, 1*time.Second+2*h, 3*time.Second+3*h)
				wantRun := histograms(time.Second, 2*time.Second, 3*time.Second)
				if s.Wait != wantWait || s.Run != wantRun {
					t.Errorf("wait: count %d sum %v, run: count %d sum %v; want %d %v, %d %v",
						s.Wait.Count, s.Wait.Sum, s.Run.Count, s.Run.Sum, wantWait.Count, wantWait.Sum, wantRun.Count, wantRun.Sum)
				}
			})
		})
	}
}
