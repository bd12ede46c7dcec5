package queue

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Found in review: a receiver kicked for a job in the inbox took a job that
// became ready meanwhile (Release) and did not pass the wake-up on, so the
// inbox job waited while another receiver slept. Both receivers must get a
// job with no time passing. (Before the fix, every -race run of this test
// failed; without -race the interleaving is rare.)
func TestMemoryKickedReceiverPassesInboxOn(t *testing.T) {
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := open(t, Config{})
			mustEnqueue(t, m, Message{ID: "X"})
			mustEnqueue(t, m, Message{ID: "L"})
			var dx, dl Delivery
			if err := m.Receive(ctx, 30*time.Minute, &dx); err != nil {
				t.Fatal(err)
			}
			if err := m.Receive(ctx, time.Hour, &dl); err != nil {
				t.Fatal(err)
			}
			got := make(chan string, 2)
			recv := func() {
				var d Delivery
				if err := m.Receive(ctx, time.Hour, &d); err == nil {
					got <- d.ID
				}
			}
			go recv()
			synctest.Wait()
			go recv()
			synctest.Wait()
			go func() { _, _ = m.Enqueue(ctx, Message{ID: freshID(1), fresh: true}) }()
			go func() { _ = m.Release(ctx, &dl) }()
			synctest.Wait()
			if n := len(got); n != 2 {
				t.Fatalf("received %d of 2 jobs with no time passing; %d in the inbox (lost wake-up)", n, m.inboxLen.Load())
			}
		})
	}
}

// Found in review: with the ack taking the next job, that job's lease ran,
// unrenewed, while a slow OnSuccess hook ran; it expired, another worker
// handled the job, and then this worker handled it again. Every job must be
// handled exactly once.
func TestConsumerSlowOnSuccessNoDoubleHandling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var first atomic.Bool
		q, err := New[int](WithHooks(Hooks{
			OnSuccess: func(Event) {
				if first.CompareAndSwap(false, true) {
					time.Sleep(time.Second) // ten leases
				}
			},
		}))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		runs := map[int]int{}
		c, err := q.Consume(ctx, func(ctx context.Context, j Job[int]) error {
			mu.Lock()
			runs[j.Payload]++
			mu.Unlock()
			return nil
		}, Workers(2), Lease(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := q.Enqueue(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(5 * time.Second)
		if _, err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for p := range 2 {
			if runs[p] != 1 {
				t.Errorf("job %d handled %d times, want 1", p, runs[p])
			}
		}
	})
}
