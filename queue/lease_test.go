package queue

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A handler cancelled by its lease gets ErrLeaseExpired exactly at its
// deadline, and the next job on the same worker starts with a live ctx: the
// expiry of one job never reaches the next.
func TestLeaseExpiryDoesNotReachNextJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string]()
		type result struct {
			job     string
			cause   error
			elapsed time.Duration
		}
		results := make(chan result, 10)
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			start := time.Now()
			if j.Payload[0] == 's' { // slow: runs until its lease ends
				<-ctx.Done()
			}
			results <- result{j.Payload, context.Cause(ctx), time.Since(start)}
			return nil
		}, Workers(1), Lease(10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			enqueueOK(t, q, fmt.Sprint("slow", i))
			enqueueOK(t, q, fmt.Sprint("fast", i))
		}
		for i := range 10 {
			r := <-results
			want := fmt.Sprint("slow", i/2)
			if i%2 == 1 {
				want = fmt.Sprint("fast", i/2)
			}
			switch {
			case r.job != want:
				t.Fatalf("job %d is %s, want %s", i, r.job, want)
			case i%2 == 0 && (!errors.Is(r.cause, ErrLeaseExpired) || r.elapsed != 10*time.Millisecond):
				t.Errorf("%s: cause %v after %v, want ErrLeaseExpired after 10ms", r.job, r.cause, r.elapsed)
			case i%2 == 1 && r.cause != nil:
				t.Errorf("%s: ctx cancelled (%v) when it started", r.job, r.cause)
			}
		}
		rep, err := c.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s, _ := q.Stats(context.Background())
		if s.Acked != 10 || rep != (Report{}) {
			t.Fatalf("acked %d, report %+v; want 10 acked before Close", s.Acked, rep)
		}
	})
}

// The keeper reads a worker's delivery to renew its lease while the worker
// races from job to job without a lock: with a lease of a few hundred
// microseconds it renews constantly. Run with -race, which reports a keeper
// reading a delivery the worker is already replacing. Every job is acked
// once, whatever the renewals and expiries did.
func TestLeaseRenewalRacesJobEnd(t *testing.T) {
	const jobs = 20000
	q, _ := New[int]()
	var handled atomic.Int64
	done := make(chan struct{})
	c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[int]) error {
		if handled.Add(1) == jobs {
			close(done)
		}
		return nil
	}, Workers(4), Lease(300*time.Microsecond), MaxAttempts(1000))
	if err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		if _, err := q.Enqueue(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	if _, err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, _ := q.Stats(context.Background())
	// A renewal later than the backend lease (450µs) on a loaded machine
	// lets a job be delivered again: it may still be waiting.
	if s.Acked+uint64(s.Ready) != jobs || s.InFlight+s.Delayed+s.Dead != 0 {
		t.Fatalf("stats %+v: want %d acked or ready, nothing else", s, jobs)
	}
}
