package redis_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

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

func newHoldHook(t *testing.T, id string) *holdHook {
	h := &holdHook{id: id, ran: make(chan struct{}), proceed: make(chan struct{})}
	t.Cleanup(h.release)
	return h
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

// TestAbandonedReceiveGivesBack pins what Receive's doc says of a ctx that ends while a look
// is in flight: Receive returns the ctx's cause only once the job the look took is given back,
// ready, its attempt unspent.
func TestAbandonedReceiveGivesBack(t *testing.T) {
	for _, start := range []bool{false, true} {
		name := "Receive"
		if start {
			name = "ReceiveStart"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			srv := redistest.Start(t, "always")
			c := newClient(t, srv.Addr())
			h := newHoldHook(t, "held")
			c.AddHook(h)
			b := redis.New(c, queueName(t), redis.WithPollInterval(10*time.Millisecond))
			if err := b.Open(ctx, driver.Config{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close(context.Background()) })
			recv := b.Receive
			if start {
				recv = b.ReceiveStart
			}
			if _, err := b.Enqueue(ctx, driver.Message{ID: "held", Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			h.armed.Store(true)
			rctx, leave := context.WithCancel(ctx)
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
			h.release()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("%s whose ctx ended: %v, want context.Canceled", name, err)
			}
			st, err := b.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Ready != 1 || st.InFlight != 0 {
				t.Fatalf("after the abandoned %s returned: %d ready, %d in flight; want 1, 0", name, st.Ready, st.InFlight)
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
