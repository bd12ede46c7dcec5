package pool_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/latency"
	"github.com/corral-go/corral/pool"
)

// hist is the histogram of ds.
func hist(ds ...time.Duration) latency.Histogram {
	var h latency.Histogram
	for _, d := range ds {
		h.Record(d)
	}
	return h
}

// checkTimings asserts the identities of a timed pool's distributions.
func checkTimings(t *testing.T, s pool.Stats) {
	t.Helper()
	finished := s.Completed + s.Failed + s.Panicked
	if s.Wait.Count != finished || s.Run.Count != finished || s.EndToEnd.Count != finished {
		t.Errorf("timings count wait %d, run %d, end-to-end %d; %d tasks finished",
			s.Wait.Count, s.Run.Count, s.EndToEnd.Count, finished)
	}
	if s.EndToEnd.Sum != s.Wait.Sum+s.Run.Sum {
		t.Errorf("end-to-end time %v, wait %v + run %v", s.EndToEnd.Sum, s.Wait.Sum, s.Run.Sum)
	}
}

// Stats reports exact counters and, with WithTimings, the distributions of the wait, run and
// end-to-end times of finished tasks.
func TestStatsTimings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 2, pool.WithOverflow(pool.Reject), pool.WithTimings())
		sleep := func(d time.Duration, err error) func(context.Context) error {
			return func(context.Context) error { time.Sleep(d); return err }
		}
		mustSubmit(t, p, bg, sleep(3*time.Second, nil))                // waits 0s, runs 3s
		mustSubmit(t, p, bg, sleep(2*time.Second, errors.New("fail"))) // waits 3s, runs 2s
		mustSubmit(t, p, bg, sleep(0, nil))                            // waits 5s, runs 0s
		if err := p.Submit(bg, sleep(0, nil)); err != pool.ErrFull {
			t.Fatal(err)
		}
		synctest.Wait()
		s := p.Stats()
		want := pool.Stats{Submitted: 4, Started: 1, Rejected: 1, Running: 1, Queued: 2, Workers: 1}
		if s != want {
			t.Fatalf("stats while running:\n got %+v\nwant %+v", s, want)
		}
		checkIdentity(t, s)
		checkTimings(t, s)
		mustClose(t, p)
		s = p.Stats()
		want = pool.Stats{Submitted: 4, Started: 3, Completed: 2, Failed: 1, Rejected: 1,
			Wait:      hist(0, 3*time.Second, 5*time.Second),
			Run:       hist(3*time.Second, 2*time.Second, 0),
			EndToEnd:  hist(3*time.Second, 5*time.Second, 5*time.Second),
			QueueWait: pool.Summary{Count: 3, Total: 8 * time.Second, Max: 5 * time.Second},
			RunTime:   pool.Summary{Count: 3, Total: 5 * time.Second, Max: 3 * time.Second}}
		if s != want {
			t.Fatalf("stats after Close:\n got %+v\nwant %+v", s, want)
		}
		checkIdentity(t, s)
		checkTimings(t, s)
		if p50, p99 := s.EndToEnd.Quantile(0.5), s.EndToEnd.Quantile(0.99); p50 != 5*time.Second || p99 != 5*time.Second {
			t.Errorf("end-to-end p50 %v, p99 %v; want 5s, 5s", p50, p99)
		}
		if got := s.Run.Mean(); got != 5*time.Second/3 {
			t.Fatalf("mean run time %v", got)
		}
	})
}

// A submitter blocked under Block waits from its Submit call, not from when room appeared.
func TestStatsWaitIncludesBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 1, pool.WithTimings()) // Block
		sleep := func(d time.Duration) func(context.Context) error {
			return func(context.Context) error { time.Sleep(d); return nil }
		}
		mustSubmit(t, p, bg, sleep(2*time.Second)) // runs 0s-2s
		mustSubmit(t, p, bg, sleep(time.Second))   // queued, runs 2s-3s
		blocked := make(chan error)
		go func() { blocked <- p.Submit(bg, sleep(time.Second)) }() // blocked until 2s, runs 3s-4s
		synctest.Wait()
		if s := p.Stats(); s.Waiting != 1 {
			t.Fatalf("waiting %d, want 1", s.Waiting)
		}
		if err := <-blocked; err != nil {
			t.Fatal(err)
		}
		mustClose(t, p)
		s := p.Stats()
		if want := hist(0, 2*time.Second, 3*time.Second); s.Wait != want {
			t.Errorf("wait: %d tasks, sum %v, max %v; want 0s, 2s, 3s", s.Wait.Count, s.Wait.Sum, s.Wait.Max)
		}
		if want := hist(2*time.Second, 3*time.Second, 4*time.Second); s.EndToEnd != want {
			t.Errorf("end to end: %d tasks, sum %v, max %v; want 2s, 3s, 4s", s.EndToEnd.Count, s.EndToEnd.Sum, s.EndToEnd.Max)
		}
		checkTimings(t, s)
	})
}

// Tasks run by their caller are timed too: under CallerRuns, from the submit; a group task
// that Group.Wait claims from the queue, from its Group.Go.
func TestStatsTimingsInline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 1, pool.WithOverflow(pool.CallerRuns), pool.WithTimings())
		sleep := func(d time.Duration) func(context.Context) error {
			return func(context.Context) error { time.Sleep(d); return nil }
		}
		mustSubmit(t, p, bg, sleep(10*time.Second)) // the worker: 0s-10s
		time.Sleep(time.Second)
		g := p.Group(bg)
		g.Go(sleep(2 * time.Second))             // queued at 1s; Wait runs it 2s-4s
		mustSubmit(t, p, bg, sleep(time.Second)) // the queue is full: runs here, 1s-2s
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		mustClose(t, p)
		s := p.Stats()
		if s.Inline != 2 {
			t.Fatalf("inline %d, want 2", s.Inline)
		}
		if want := hist(0, 0, time.Second); s.Wait != want {
			t.Errorf("wait: %d tasks, sum %v, max %v; want 0s, 0s, 1s", s.Wait.Count, s.Wait.Sum, s.Wait.Max)
		}
		if want := hist(10*time.Second, time.Second, 2*time.Second); s.Run != want {
			t.Errorf("run: %d tasks, sum %v, max %v; want 10s, 1s, 2s", s.Run.Count, s.Run.Sum, s.Run.Max)
		}
		checkTimings(t, s)
	})
}

// Stats can be read concurrently with submits and workers.
func TestStatsConcurrent(t *testing.T) {
	p := pool.New(4, 16, pool.WithOverflow(pool.DropOldest))
	stop := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			select {
			case <-stop:
				return
			default:
				checkIdentity(t, p.Stats())
			}
		}
	}()
	for range 2000 {
		_ = p.Submit(bg, func(context.Context) error { return nil })
	}
	close(stop)
	<-read
	mustClose(t, p)
	s := p.Stats()
	if s.Submitted != 2000 || s.Completed+s.Dropped.Evicted != 2000 {
		t.Fatalf("stats %+v", s)
	}
}

// A timed pool's distributions count every finished task, in every snapshot, while submits,
// workers and evictions race with Stats.
func TestStatsTimingsConcurrent(t *testing.T) {
	p := pool.New(4, 16, pool.WithOverflow(pool.DropOldest), pool.WithTimings())
	stop := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			select {
			case <-stop:
				return
			default:
				s := p.Stats()
				checkIdentity(t, s)
				checkTimings(t, s)
			}
		}
	}()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 1000 {
				_ = p.Submit(bg, func(context.Context) error { return nil })
			}
		})
	}
	wg.Wait()
	close(stop)
	<-read
	mustClose(t, p)
	s := p.Stats()
	if s.Submitted != 2000 || s.Completed+s.Dropped.Evicted != 2000 || s.Wait.Count != s.Completed {
		t.Fatalf("submitted %d, completed %d, evicted %d, waits %d", s.Submitted, s.Completed,
			s.Dropped.Evicted, s.Wait.Count)
	}
	checkTimings(t, s)
}
