package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

// openBackend opens a backend of the queue name on pool, closed when t ends.
func openBackend(t *testing.T, name string, cfg driver.Config) *postgres.Backend {
	t.Helper()
	ctx := context.Background()
	b := postgres.New(db(t), name)
	if err := b.Open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(ctx) })
	return b
}

// deadLetter returns the only dead letter of b.
func deadLetter(t *testing.T, b *postgres.Backend) driver.DeadMessage {
	t.Helper()
	var out []driver.DeadMessage
	for dm, err := range b.DeadLetters(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dm)
	}
	if len(out) != 1 {
		t.Fatalf("%d dead letters, want 1", len(out))
	}
	return out[0]
}

// A poison job that killed its worker on each of its 3 runs (each started, never settled) is
// buried on its fourth delivery without a run: the dead letter's Attempt is 3, its history
// one entry per run, Number 1 to 3, each the expiry the backend recorded as it took the job
// back, and none for the burial (Bury's Attempt has Number 0 and no error).
func TestPoisonAttemptsAreRuns(t *testing.T) {
	const lease = 200 * time.Millisecond
	ctx := context.Background()
	b := openBackend(t, queueName(t), driver.Config{})
	if _, err := b.Enqueue(ctx, driver.Message{ID: "poison", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var d driver.Delivery
	for run := 1; run <= 3; run++ {
		d = driver.Delivery{}
		if err := b.Receive(ctx, lease, &d); err != nil {
			t.Fatal(err)
		}
		if d.Attempt != run {
			t.Fatalf("delivery %d: attempt %d", run, d.Attempt)
		}
		if err := b.Start(ctx, &d); err != nil {
			t.Fatal(err)
		}
		// The worker dies: the delivery is never settled.
	}
	d = driver.Delivery{}
	if err := b.Receive(ctx, lease, &d); err != nil {
		t.Fatal(err)
	}
	if d.Attempt != 4 {
		t.Fatalf("fourth delivery: attempt %d, want 4", d.Attempt)
	}
	if _, err := b.Bury(ctx, &d, queue.ReasonAttempts, queue.Attempt{}); err != nil {
		t.Fatal(err)
	}
	dm := deadLetter(t, b)
	if dm.Message.Attempt != 3 {
		t.Errorf("dead letter's Attempt %d, want 3 (the runs)", dm.Message.Attempt)
	}
	if len(dm.History) != 3 {
		t.Fatalf("history %v: %d entries, want 3", dm.History, len(dm.History))
	}
	for i, a := range dm.History {
		if a.Number != i+1 || a.Error != queue.ErrLeaseExpired.Error() || a.Start.IsZero() || a.End.Before(a.Start) {
			t.Errorf("history[%d] = %+v, want Number %d, Error %q, Start <= End", i, a, i+1, queue.ErrLeaseExpired)
		}
	}
}

// A job buried without a run on a delivery (a payload that cannot be decoded) keeps the entry
// that says why, Number 0, and its dead letter's Attempt is the runs it had: 0, and 1 for a
// job that ran once before.
func TestNoRunBurialAttempt(t *testing.T) {
	ctx := context.Background()
	b := openBackend(t, queueName(t), driver.Config{})
	if _, err := b.Enqueue(ctx, driver.Message{ID: "j", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var d driver.Delivery
	if err := b.Receive(ctx, time.Minute, &d); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx, &d); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := b.Nack(ctx, &d, 0, queue.Attempt{Number: 1, Start: now, End: now, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	d = driver.Delivery{}
	if err := b.Receive(ctx, time.Minute, &d); err != nil {
		t.Fatal(err)
	}
	why := queue.Attempt{Number: 0, Start: now, End: now, Error: "cannot decode"}
	if _, err := b.Bury(ctx, &d, queue.ReasonDecode, why); err != nil {
		t.Fatal(err)
	}
	dm := deadLetter(t, b)
	got := fmt.Sprintf("attempt %d, history %d:%q %d:%q", dm.Message.Attempt, dm.History[0].Number, dm.History[0].Error,
		dm.History[len(dm.History)-1].Number, dm.History[len(dm.History)-1].Error)
	if want := `attempt 1, history 1:"boom" 0:"cannot decode"`; got != want || len(dm.History) != 2 {
		t.Errorf("dead letter: %s (%d entries), want %s (2 entries)", got, len(dm.History), want)
	}
}

// A job evicted by DropOldest does not run on the eviction: its entry has Number 0, and its
// dead letter's Attempt is the run it had before.
func TestEvictedEntryHasNoRun(t *testing.T) {
	ctx := context.Background()
	b := openBackend(t, queueName(t), driver.Config{Capacity: 1, Overflow: queue.DropOldest})
	if _, err := b.Enqueue(ctx, driver.Message{ID: "old", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var d driver.Delivery
	if err := b.Receive(ctx, time.Minute, &d); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx, &d); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := b.Nack(ctx, &d, time.Hour, queue.Attempt{Number: 1, Start: now, End: now, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(ctx, driver.Message{ID: "new", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	dm := deadLetter(t, b)
	h := dm.History
	if dm.Message.ID != "old" || dm.Message.Attempt != 1 || len(h) != 2 || h[0].Number != 1 || h[1].Number != 0 {
		t.Errorf("evicted: %s attempt %d history %+v, want old, attempt 1, entries of Number 1 and 0", dm.Message.ID, dm.Message.Attempt, h)
	}
}
