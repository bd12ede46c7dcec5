package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

// TestDueNeverEarly pins that the server's millisecond clock never makes a job due before its
// time: a job handed back with a delay (not a whole number of milliseconds) is due no sooner
// than the delay after the Nack was called, and a job enqueued with a NotBefore is not due
// before it (Get's NextRun is the due time the backend stores). Rounding down either (the
// current millisecond, begun up to 1ms before, or the delay) made a job due up to a
// millisecond early, which CI once caught as a snoozed job run 149.989ms after its 150ms
// snooze.
func TestDueNeverEarly(t *testing.T) {
	b := openBackend(t, driver.Config{})
	ctx := context.Background()
	for i := range 20 {
		delay := time.Minute + time.Duration(i)*137*time.Microsecond
		id := fmt.Sprintf("nack-%d", i)
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		var d driver.Delivery
		if err := b.Receive(ctx, time.Minute, &d); err != nil || d.ID != id {
			t.Fatalf("Receive: %q, %v; want %s", d.ID, err, id)
		}
		if err := b.Start(ctx, &d); err != nil {
			t.Fatal(err)
		}
		called := time.Now()
		if err := b.Nack(ctx, &d, delay, queue.Attempt{Number: 1, Start: called, End: called, Error: "later"}); err != nil {
			t.Fatal(err)
		}
		if ji, err := b.Get(ctx, id); err != nil || ji.NextRun.Before(called.Add(delay)) {
			t.Errorf("job %s nacked at %v with delay %v: due at %v, %v; want no sooner than %v",
				id, called.Format(time.StampMicro), delay, ji.NextRun.Format(time.StampMicro), err, called.Add(delay).Format(time.StampMicro))
		}

		nb := time.Now().Add(time.Minute + time.Duration(i)*137*time.Microsecond)
		id = fmt.Sprintf("later-%d", i)
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x"), NotBefore: nb}); err != nil {
			t.Fatal(err)
		}
		if ji, err := b.Get(ctx, id); err != nil || ji.NextRun.Before(nb) {
			t.Errorf("job %s enqueued not before %v: due at %v, %v", id, nb.Format(time.StampMicro), ji.NextRun.Format(time.StampMicro), err)
		}
	}
}
