package memory

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue/driver"
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
			m := open(t, driver.Config{})
			mustEnqueue(t, m, driver.Message{ID: "X"})
			mustEnqueue(t, m, driver.Message{ID: "L"})
			var dx, dl driver.Delivery
			if err := m.Receive(ctx, 30*time.Minute, &dx); err != nil {
				t.Fatal(err)
			}
			if err := m.Receive(ctx, time.Hour, &dl); err != nil {
				t.Fatal(err)
			}
			got := make(chan string, 2)
			recv := func() {
				var d driver.Delivery
				if err := m.Receive(ctx, time.Hour, &d); err == nil {
					got <- d.ID
				}
			}
			go recv()
			synctest.Wait()
			go recv()
			synctest.Wait()
			go func() { _, _ = m.EnqueueFresh(ctx, driver.Message{ID: freshID(1)}) }()
			go func() { _ = m.Release(ctx, &dl, 0) }()
			synctest.Wait()
			if n := len(got); n != 2 {
				t.Fatalf("received %d of 2 jobs with no time passing; %d in the inbox (lost wake-up)", n, m.inboxLen.Load())
			}
		})
	}
}
