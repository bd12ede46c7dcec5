package redis_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
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

// holdHook holds the answer of the first script, once armed, that took the job id: it
// closes ran once the server ran that script, and hands the answer over when proceed is
// closed, as a slow network would.
type holdHook struct {
	id      string
	armed   atomic.Bool
	ran     chan struct{}
	proceed chan struct{}
	once    sync.Once
}

// newHoldHook returns a hook for id; the test defers its release, so that a failing test lets
// the held exchange end before the Backend's Close waits for it.
func newHoldHook(id string) *holdHook {
	return &holdHook{id: id, ran: make(chan struct{}), proceed: make(chan struct{})}
}

func (h *holdHook) release() { h.once.Do(func() { close(h.proceed) }) }

func (h *holdHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *holdHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

func (h *holdHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		if c, ok := cmd.(*goredis.Cmd); ok && err == nil && h.armed.Load() {
			if r, ok := c.Val().([]any); ok && len(r) > 0 && r[0] == h.id && h.armed.CompareAndSwap(true, false) {
				close(h.ran)
				<-h.proceed
			}
		}
		return err
	}
}

// TestAbandonedReceiveGivesBack pins what Receive's doc says of a ctx cancelled while a look
// is in flight: Receive returns the ctx's cause only once the job the look took is given back,
// ready, its attempt unspent; and a receiver that then gives up waiting (its abandon context,
// driver.WithAbandon, as a consumer's Close makes when its ctx ends) gets the cause at once,
// while the look's answer is still held, leaving the job in flight for its lease.
func TestAbandonedReceiveGivesBack(t *testing.T) {
	for _, tc := range []struct {
		name          string
		start, giveUp bool
	}{{"Receive", false, false}, {"ReceiveStart", true, false}, {"GivenUp", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			srv := redistest.Start(t, "always")
			c := newClient(t, srv.Addr())
			h := newHoldHook("held")
			defer h.release()
			c.AddHook(h)
			b := redis.New(c, queueName(t), redis.WithPollInterval(10*time.Millisecond), redis.WithCallTimeout(time.Hour))
			if err := b.Open(ctx, driver.Config{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close(context.Background()) })
			recv := b.Receive
			if tc.start {
				recv = b.ReceiveStart
			}
			if _, err := b.Enqueue(ctx, driver.Message{ID: "held", Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			h.armed.Store(true)
			abandon, giveUp := context.WithCancel(ctx)
			defer giveUp()
			rctx, leave := context.WithCancel(driver.WithAbandon(ctx, abandon))
			errc := make(chan error, 1)
			go func() {
				var d driver.Delivery
				errc <- recv(rctx, time.Minute, &d)
			}()
			select {
			case <-h.ran:
			case <-ctx.Done():
				t.Fatal("the receive script never took the job")
			}
			leave()
			want := 1 // ready after the receiver left
			if tc.giveUp {
				giveUp()
				want = 0
			} else {
				h.release()
			}
			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("%s whose ctx ended: %v, want context.Canceled", tc.name, err)
				}
			case <-ctx.Done():
				t.Fatalf("%s whose ctx ended still waits for the held answer", tc.name)
			}
			h.release()
			st, err := b.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Ready != want || st.InFlight != 1-want {
				t.Fatalf("after the abandoned %s returned: %d ready, %d in flight; want %d, %d", tc.name, st.Ready, st.InFlight, want, 1-want)
			}
			if tc.giveUp {
				return
			}
			var d driver.Delivery
			if err := recv(ctx, time.Minute, &d); err != nil {
				t.Fatal(err)
			}
			if d.ID != "held" || d.Attempt != 1 {
				t.Fatalf("received %q, Attempt %d; want held, 1 (the abandoned receive's attempt given back)", d.ID, d.Attempt)
			}
		})
	}
}

// A Receive whose ctx has already ended takes nothing: the ready jobs keep their order.
func TestCancelledReceiveTakesNothing(t *testing.T) {
	b := openBackend(t, driver.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"a", "b"} {
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	gone, leave := context.WithCancel(ctx)
	leave()
	var d driver.Delivery
	if err := b.ReceiveStart(gone, time.Minute, &d); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReceiveStart with a cancelled ctx: %q, %v; want context.Canceled", d.ID, err)
	}
	for _, want := range []string{"a", "b"} {
		if err := b.ReceiveStart(ctx, time.Minute, &d); err != nil {
			t.Fatal(err)
		}
		if d.ID != want || d.Attempt != 1 {
			t.Fatalf("received %q, attempt %d; want %s, 1", d.ID, d.Attempt, want)
		}
	}
}
