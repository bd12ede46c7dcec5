package queue

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemoryLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := NewMemory()
		if err := m.Open(ctx, Config{Capacity: 2, Overflow: Reject}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Enqueue(ctx, Message{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Enqueue(ctx, Message{ID: "a"}); err != ErrDuplicate {
			t.Fatalf("second enqueue of a: %v, want ErrDuplicate", err)
		}
		if _, err := m.Enqueue(ctx, Message{ID: "b", NotBefore: time.Now().Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Enqueue(ctx, Message{ID: "c"}); err != ErrFull {
			t.Fatalf("enqueue at capacity: %v, want ErrFull", err)
		}
		var d Delivery
		if err := m.Receive(ctx, time.Minute, &d); err != nil || d.ID != "a" || d.Attempt != 1 {
			t.Fatalf("receive: %v %q attempt %d", err, d.ID, d.Attempt)
		}
		start := time.Now()
		var d2 Delivery
		if err := m.Receive(ctx, time.Minute, &d2); err != nil || d2.ID != "b" {
			t.Fatalf("receive: %v %q", err, d2.ID)
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("delayed job delivered after %v, want 1s", got)
		}
		if err := m.Ack(ctx, &d); err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(ctx, &d); err != ErrLeaseLost {
			t.Fatalf("second ack: %v, want ErrLeaseLost", err)
		}
		// Lease expiry: b comes back with attempt 2 after its lease.
		var d3 Delivery
		if err := m.Receive(ctx, time.Minute, &d3); err != nil || d3.ID != "b" || d3.Attempt != 2 {
			t.Fatalf("redelivery: %v %q attempt %d", err, d3.ID, d3.Attempt)
		}
		if got := time.Since(start); got != time.Second+time.Minute {
			t.Fatalf("redelivered after %v, want 1m1s", got)
		}
		if err := m.Ack(ctx, &d2); err != ErrLeaseLost {
			t.Fatalf("ack of expired lease: %v, want ErrLeaseLost", err)
		}
		if err := m.Bury(ctx, &d3, ReasonPermanent, Attempt{Number: 2, Error: "boom"}); err != nil {
			t.Fatal(err)
		}
		var dead []DeadMessage
		for dm, err := range m.DeadLetters(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			dead = append(dead, dm)
		}
		if len(dead) != 1 || dead[0].ID != "b" || len(dead[0].History) != 2 || dead[0].History[0].Error != ErrLeaseExpired.Error() {
			t.Fatalf("dead letters: %+v", dead)
		}
		s, _ := m.Stats(ctx)
		if s != (BackendStats{Dead: 1}) {
			t.Fatalf("stats %+v", s)
		}
	})
}
