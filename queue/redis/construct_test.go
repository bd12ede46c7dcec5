package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/redis"
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
	mustPanic(t, "nil option", func() { redis.New(c, "q", nil) })
	mustPanic(t, "WithCallTimeout(0s)", func() { redis.WithCallTimeout(0) })
	mustPanic(t, "WithPollInterval(-1s)", func() { redis.WithPollInterval(-time.Second) })
	mustPanic(t, "zero Backend", func() { _ = new(redis.Backend).Open(context.Background(), queue.Config{}) })
}

// TestUnreachable pins that a server that cannot be reached is queue.ErrUnavailable, within
// the call timeout.
func TestUnreachable(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer c.Close()
	b := redis.New(c, "q", redis.WithCallTimeout(500*time.Millisecond))
	err := b.Open(context.Background(), queue.Config{})
	if !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("Open on a closed port: %v, want ErrUnavailable", err)
	}
}
