package redis_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// consumers returns the consumers of queue name's group.
func consumers(t *testing.T, c *goredis.Client, name string) []goredis.XInfoConsumer {
	t.Helper()
	cs, err := c.XInfoConsumers(context.Background(), "corral:{"+name+"}:s", "g").Result()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// receiveOne makes b a consumer of its group (Redis creates one when it delivers an entry):
// it enqueues job id, receives and acks it.
func receiveOne(t *testing.T, b *redis.Backend, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var d driver.Delivery
	if err := b.Receive(ctx, time.Minute, &d); err != nil || d.ID != id {
		t.Fatalf("Receive: %v, %q; want %s", err, d.ID, id)
	}
	if err := b.Ack(ctx, &d); err != nil {
		t.Fatal(err)
	}
}

// TestCloseRemovesConsumer pins that a Backend's Close removes its consumer from the group:
// 30 backends opened, received on and closed beside a live one leave one consumer.
func TestCloseRemovesConsumer(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := newClient(t, srv.Addr())
	name := queueName(t)
	ctx := context.Background()
	open := func(id string) *redis.Backend {
		b := redis.New(c, name, redis.WithPollInterval(10*time.Millisecond))
		if err := b.Open(ctx, driver.Config{}); err != nil {
			t.Fatal(err)
		}
		receiveOne(t, b, id)
		return b
	}
	live := open("live")
	defer live.Close(ctx)
	for i := range 30 {
		if err := open(strconv.Itoa(i)).Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if cs := consumers(t, c, name); len(cs) != 1 {
		t.Fatalf("%d consumers after 30 backends closed beside a live one, want 1: %+v", len(cs), cs)
	}
}

// TestDeadConsumerReaped pins that a consumer left by a Backend that never closed, holding a
// started job, is reaped once its job was taken back and it stayed idle past the bound (twice
// the lease, at least ten poll intervals): the job is redelivered to a live Backend, and the
// group then holds no consumer but that Backend's.
func TestDeadConsumerReaped(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := newClient(t, srv.Addr())
	name := queueName(t)
	ctx := context.Background()
	const (
		poll  = 10 * time.Millisecond
		lease = 500 * time.Millisecond
		bound = 2 * lease // the reap bound: max(2*lease, 10*poll)
	)
	open := func() *redis.Backend {
		b := redis.New(c, name, redis.WithPollInterval(poll))
		if err := b.Open(ctx, driver.Config{}); err != nil {
			t.Fatal(err)
		}
		return b
	}
	dead := open() // never closed: its process died
	if _, err := dead.Enqueue(ctx, driver.Message{ID: "j", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var d driver.Delivery
	if err := dead.Receive(ctx, lease, &d); err != nil {
		t.Fatal(err)
	}
	if err := dead.Start(ctx, &d); err != nil {
		t.Fatal(err)
	}
	diedAt := time.Now()
	cs := consumers(t, c, name)
	if len(cs) != 1 {
		t.Fatalf("consumers %+v; want the dead backend's", cs)
	}
	deadName := cs[0].Name

	live := open()
	defer live.Close(ctx)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var again driver.Delivery
	if err := live.Receive(rctx, lease, &again); err != nil || again.ID != "j" || again.Attempt != 2 {
		t.Fatalf("Receive after the dead consumer's lease: %v, %q attempt %d; want j, attempt 2", err, again.ID, again.Attempt)
	}
	if err := live.Ack(ctx, &again); err != nil {
		t.Fatal(err)
	}
	// The live backend waits on, past one and a half bounds after the dead one's last command,
	// its receivers polling (and reaping).
	wctx, wcancel := context.WithDeadline(ctx, diedAt.Add(bound*3/2+4*poll))
	defer wcancel()
	var none driver.Delivery
	if err := live.Receive(wctx, lease, &none); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive on an empty queue: %v, want the deadline", err)
	}
	// The live backend's consumer may be reaped too (it held nothing, and Redis 7.0 counts
	// a consumer idle from its last entry read or claimed); the dead one's must be.
	cs = consumers(t, c, name)
	for _, c := range cs {
		if c.Name == deadName || c.Pending != 0 {
			t.Fatalf("consumers %+v; want none but the live backend's, none with a pending entry (dead: %s)", cs, deadName)
		}
	}
}
