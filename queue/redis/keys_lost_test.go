package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// TestReceiveAfterKeysLost: a server that lost the queue's keys while its Backends were open
// (a replica promoted before it had them, a restart without persistence) makes Stats, and
// Receive, record them again as Open and CheckLease did (the consumer group, the shared
// settings, the lease); Receive delivers the jobs enqueued since, and what the server lost
// stays lost.
func TestReceiveAfterKeysLost(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := newClient(t, srv.Addr())
	name := queueName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := redis.New(c, name, redis.WithPollInterval(10*time.Millisecond))
	if err := b.Open(ctx, driver.Config{Capacity: 10}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	if err := b.CheckLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	lose := func(id string) { // enqueue id, then lose every key
		t.Helper()
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	lose("lost")
	if st, err := b.Stats(ctx); err != nil || st != (driver.Stats{}) {
		t.Fatalf("Stats after the keys were lost: %+v, %v; want zero stats", st, err)
	}
	lose("lost too")
	if _, err := b.Enqueue(ctx, driver.Message{ID: "after", Body: []byte("y")}); err != nil {
		t.Fatalf("Enqueue after the keys were lost: %v", err)
	}
	var d driver.Delivery
	if err := b.Receive(ctx, time.Minute, &d); err != nil || d.ID != "after" {
		t.Fatalf("Receive after the keys were lost: %q, %v; want the job enqueued since", d.ID, err)
	}
	if err := b.Ack(ctx, &d); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer rcancel()
	if err := b.Receive(rctx, time.Minute, &d); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive with nothing left: %q, %v; want the context's deadline", d.ID, err)
	}
	// The settings and the lease are the queue's again.
	var se *driver.SettingsError
	if err := redis.New(c, name).Open(ctx, driver.Config{Capacity: 20}); !errors.As(err, &se) || se.Setting != "capacity" {
		t.Errorf("Open with another capacity after the keys were recorded again: %v; want a SettingsError on capacity", err)
	}
	other := redis.New(c, name)
	if err := other.Open(ctx, driver.Config{Capacity: 10}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	if err := other.CheckLease(ctx, 2*time.Minute); !errors.As(err, &se) || se.Setting != "lease" {
		t.Errorf("CheckLease with another lease after the keys were recorded again: %v; want a SettingsError on lease", err)
	}
}
