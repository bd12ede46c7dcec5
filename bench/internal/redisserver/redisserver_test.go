package redisserver

import (
	"context"
	"net"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The server answers on its address with appendfsync always, and no longer listens once the
// test that started it ended.
func TestStart(t *testing.T) {
	var addr string
	t.Run("running", func(t *testing.T) {
		addr = Start(t)
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := c.ConfigGet(ctx, "appendfsync").Result()
		if err != nil {
			t.Fatal(err)
		}
		if v["appendfsync"] != "always" {
			t.Fatalf("appendfsync = %q, want always", v["appendfsync"])
		}
	})
	if c, err := net.Dial("tcp", addr); err == nil {
		_ = c.Close()
		t.Fatalf("%s still accepts connections after its test ended", addr)
	}
}
