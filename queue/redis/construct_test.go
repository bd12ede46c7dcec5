package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/queuetest"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// mustPanic asserts that f panics with a message containing want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, want) {
			t.Errorf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

func TestNewMisuse(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	mustPanic(t, "nil client", func() { redis.New(nil, "q") })
	mustPanic(t, "want a queue name", func() { redis.New(c, "") })
	mustPanic(t, "want a queue name", func() { redis.New(c, "a{b}") })
	mustPanic(t, "want a queue name", func() { redis.New(c, "a\x00b") })
	mustPanic(t, "want a queue name", func() { redis.New(c, "a\xffb") })
	mustPanic(t, "want a queue name", func() { redis.New(c, strings.Repeat("é", 101)) })
	redis.New(c, strings.Repeat("é", 100)) // 200 bytes of UTF-8
	mustPanic(t, "nil option", func() { redis.New(c, "q", nil) })
	mustPanic(t, "WithCallTimeout(0s)", func() { redis.WithCallTimeout(0) })
	mustPanic(t, "WithPollInterval(-1s)", func() { redis.WithPollInterval(-time.Second) })
	mustPanic(t, "zero Backend", func() { _ = new(redis.Backend).Open(context.Background(), driver.Config{}) })
}

// Every exported method of a zero Backend, whatever its arguments, panics at once, in the
// caller's goroutine, saying what to use.
func TestZeroBackendPanicsSayingWhatToUse(t *testing.T) {
	queuetest.RunZeroBackend(t, new(redis.Backend), "redis: zero Backend: use redis.New", nil)
}

// TestUnreachable pins that a server that cannot be reached is queue.ErrUnavailable, within
// the call timeout.
func TestUnreachable(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer c.Close()
	b := redis.New(c, "q", redis.WithCallTimeout(500*time.Millisecond))
	err := b.Open(context.Background(), driver.Config{})
	if !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("Open on a closed port: %v, want ErrUnavailable", err)
	}
}

// TestExtendLease: Extend renews a delivery to the queue's lease, the one CheckLease agreed;
// another lease is refused with an error naming both, and the delivery is not renewed: a
// receiver asking with the queue's lease reclaims it once that lease has passed.
func TestExtendLease(t *testing.T) {
	srv := redistest.Start(t, "always")
	ctx := context.Background()
	b := redis.New(newClient(t, srv.Addr()), queueName(t), redis.WithPollInterval(10*time.Millisecond))
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	const lease = 300 * time.Millisecond
	if err := b.CheckLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(ctx, driver.Message{ID: "j", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var d driver.Delivery
	if err := b.Receive(ctx, lease, &d); err != nil {
		t.Fatal(err)
	}
	if err := b.Extend(ctx, &d, lease); err != nil {
		t.Errorf("Extend with the queue's lease: %v", err)
	}
	err := b.Extend(ctx, &d, time.Hour)
	if err == nil || !strings.Contains(err.Error(), "1h0m0s") || !strings.Contains(err.Error(), "300ms") {
		t.Fatalf("Extend with another lease: %v; want an error naming 1h0m0s and 300ms", err)
	}
	start := time.Now()
	var again driver.Delivery
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.Receive(rctx, lease, &again); err != nil || again.ID != "j" || !again.Redelivered {
		t.Fatalf("Receive after the refused Extend: %v, %q (redelivered %v); want j again", err, again.ID, again.Redelivered)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("reclaimed after %v: the refused Extend must not have renewed it for an hour", took)
	}
	if err := b.Extend(ctx, &d, lease); !errors.Is(err, queue.ErrLeaseLost) {
		t.Errorf("Extend of the reclaimed delivery: %v, want ErrLeaseLost", err)
	}
}

// The dead-letter verbs and Stats of a Backend that was never opened say so, and after Close
// return ErrClosed, as Enqueue and Receive do: they send nothing to the server (a Redrive
// before Open used to move the dead letter back into a queue nobody had opened).
func TestDeadLetterVerbsAndStatsNeedAnOpenBackend(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := newClient(t, srv.Addr())
	ctx := context.Background()
	name := queueName(t)
	// A dead letter, stored by a Backend that is then closed.
	first := redis.New(c, name)
	if err := first.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Enqueue(ctx, driver.Message{ID: "dead", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var d driver.Delivery
	if err := first.Receive(ctx, time.Minute, &d); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Bury(ctx, &d, driver.ReasonPanic, driver.Attempt{}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(when string, b *redis.Backend, ok func(error) bool) {
		t.Helper()
		if err := b.Redrive(ctx, "dead"); !ok(err) {
			t.Errorf("Redrive %s: %v", when, err)
		}
		if err := b.Purge(ctx, "dead"); !ok(err) {
			t.Errorf("Purge %s: %v", when, err)
		}
		if _, err := b.Stats(ctx); !ok(err) {
			t.Errorf("Stats %s: %v", when, err)
		}
		n := 0
		for _, err := range b.DeadLetters(ctx) {
			if n++; !ok(err) {
				t.Errorf("DeadLetters %s: %v", when, err)
			}
		}
		if n != 1 {
			t.Errorf("DeadLetters %s yielded %d times, want once (the error)", when, n)
		}
	}
	notOpened := func(err error) bool { return err != nil && strings.Contains(err.Error(), "redis: backend not opened") }
	check("after Close", first, func(err error) bool { return errors.Is(err, driver.ErrClosed) })
	check("before Open", redis.New(c, name), notOpened)
	// The dead letter is where it was: an opened Backend finds it.
	b := redis.New(c, name)
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if s, err := b.Stats(ctx); err != nil || s.Dead != 1 || s.Ready != 0 {
		t.Errorf("Stats of an opened Backend: %+v, %v; want the one dead letter", s, err)
	}
}
