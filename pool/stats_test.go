package pool_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/pool"
)

// Stats reports exact counters and, with WithTimings, queue-wait and run-time summaries.
func TestStatsSummaries(t *testing.T) {
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
		want := pool.Stats{Submitted: 4, Started: 1, Rejected: 1, Running: 1, Queued: 2, Workers: 1,
			QueueWait: pool.Summary{Count: 1}}
		if s != want {
			t.Fatalf("stats while running:\n got %+v\nwant %+v", s, want)
		}
		checkIdentity(t, s)
		mustClose(t, p)
		s = p.Stats()
		want = pool.Stats{Submitted: 4, Started: 3, Completed: 2, Failed: 1, Rejected: 1,
			QueueWait: pool.Summary{Count: 3, Total: 8 * time.Second, Max: 5 * time.Second},
			RunTime:   pool.Summary{Count: 3, Total: 5 * time.Second, Max: 3 * time.Second}}
		if s != want {
			t.Fatalf("stats after Close:\n got %+v\nwant %+v", s, want)
		}
		if got := s.RunTime.Mean(); got != 5*time.Second/3 {
			t.Fatalf("mean run time %v", got)
		}
		checkIdentity(t, s)
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
