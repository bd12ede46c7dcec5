package promcorral_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-go/corral/promcorral"
	"github.com/corral-go/corral/queue"
)

// fakeQueue counts its Stats calls and answers as told: Acked = the call's number, an error,
// or nothing until the call's ctx ends.
type fakeQueue struct {
	mu    sync.Mutex
	calls int
	fail  bool // answer with an error
	hang  bool // answer only when ctx ends, with its error
}

func (f *fakeQueue) Stats(ctx context.Context) (queue.Stats, error) {
	f.mu.Lock()
	f.calls++
	n, fail, hang := f.calls, f.fail, f.hang
	f.mu.Unlock()
	switch {
	case hang:
		<-ctx.Done()
		return queue.Stats{}, ctx.Err()
	case fail:
		return queue.Stats{}, errors.New("unreachable")
	}
	return queue.Stats{Acked: uint64(n)}, nil
}

func (f *fakeQueue) set(fail, hang bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.hang = fail, hang
}

func (f *fakeQueue) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// scrape gathers reg and returns the values of corral_queue_jobs_acked_total and
// corral_queue_stats_errors_total (-1 for one not exported).
func scrape(t *testing.T, reg *prometheus.Registry) (acked, errs float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	acked, errs = -1, -1
	for _, mf := range mfs {
		switch mf.GetName() {
		case "corral_queue_jobs_acked_total":
			acked = mf.GetMetric()[0].GetCounter().GetValue()
		case "corral_queue_stats_errors_total":
			errs = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return acked, errs
}

// A queue's Stats are read at most once per interval, whatever the scrapes; a failed read
// is counted and the last values read are exported again; a read that hangs is given up at
// the timeout.
func TestQueueStatsCached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		reg := prometheus.NewRegistry()
		reg.MustRegister(promcorral.New(promcorral.WithQueue("q", f),
			promcorral.WithStatsInterval(10*time.Second), promcorral.WithStatsTimeout(time.Second)))
		check := func(step string, wantAcked, wantErrs float64, wantCalls int) {
			t.Helper()
			acked, errs := scrape(t, reg)
			if acked != wantAcked || errs != wantErrs || f.count() != wantCalls {
				t.Fatalf("%s: acked %v, stats errors %v after %d Stats calls; want %v, %v after %d",
					step, acked, errs, f.count(), wantAcked, wantErrs, wantCalls)
			}
		}
		check("first scrape", 1, 0, 1)
		for range 5 {
			check("scrape within the interval", 1, 0, 1)
		}
		time.Sleep(9 * time.Second)
		check("9s later", 1, 0, 1)
		time.Sleep(time.Second)
		check("10s later", 2, 0, 2)

		f.set(true, false)
		time.Sleep(10 * time.Second)
		check("a failed read", 2, 1, 3)
		check("within the interval of a failed read", 2, 1, 3)

		f.set(false, true)
		time.Sleep(10 * time.Second)
		start := time.Now()
		check("a read that hangs", 2, 2, 4)
		if d := time.Since(start); d != time.Second {
			t.Fatalf("a scrape of a hanging queue took %v, want the 1s timeout", d)
		}
	})
}

// Concurrent scrapes share one read.
func TestQueueStatsConcurrentScrapes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{hang: true}
		reg := prometheus.NewRegistry()
		reg.MustRegister(promcorral.New(promcorral.WithQueue("q", f), promcorral.WithStatsTimeout(time.Second)))
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := f.count(); n != 1 {
			t.Fatalf("Stats calls = %d, want 1 for 4 scrapes at once", n)
		}
		if _, errs := scrape(t, reg); errs != 1 {
			t.Fatalf("stats errors = %v, want 1", errs)
		}
	})
}

// A queue none of whose reads has succeeded exports only its error count.
func TestQueueNeverRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(promcorral.New(promcorral.WithQueue("q", &fakeQueue{fail: true})))
		if acked, errs := scrape(t, reg); acked != -1 || errs != 1 {
			t.Fatalf("acked %v, stats errors %v; want none exported, 1", acked, errs)
		}
	})
}

func TestNewPanics(t *testing.T) {
	q := &fakeQueue{}
	for _, tc := range []struct {
		want string
		f    func()
	}{
		{`promcorral: two queues named "q"`, func() { promcorral.New(promcorral.WithQueue("q", q), promcorral.WithQueue("q", q)) }},
		{`promcorral: WithQueue("", ...): need a name and a queue`, func() { promcorral.WithQueue("", q) }},
		{`promcorral: WithPool("p", ...): need a name and a pool`, func() { promcorral.WithPool("p", nil) }},
		{"promcorral: WithBuckets: bounds must be positive and increasing, got 1ms at 1", func() { promcorral.WithBuckets(time.Second, time.Millisecond) }},
		{"promcorral: WithStatsTimeout(0s): need a positive timeout", func() { promcorral.WithStatsTimeout(0) }},
		{"promcorral: nil option", func() { promcorral.New(nil) }},
	} {
		func() {
			defer func() {
				if r := recover(); r != tc.want {
					t.Errorf("recovered %v, want %q", r, tc.want)
				}
			}()
			tc.f()
		}()
	}
}
