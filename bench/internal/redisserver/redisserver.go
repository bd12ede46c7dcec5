// Package redisserver starts one throwaway redis-server for the benchmarks of this module: a
// temporary directory, a random loopback port, appendonly yes with appendfsync always (the
// setting under which an acknowledged job survives a crash of the server), no RDB snapshots,
// stopped and its directory removed when the benchmark ends. The server, and its settings, are
// corral's internal/testserver, which queue/redis's tests use too; this package adds a
// client's readiness check.
//
// The binary is Debian's (`apt-get install redis-server`), on PATH or at CORRAL_REDIS_SERVER.
package redisserver

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/internal/testserver"
)

// Start starts a server, stopped when tb ends, and returns its host:port.
func Start(tb testing.TB) string {
	tb.Helper()
	r, err := testserver.StartRedis("redisserver", "always", ping)
	if r != nil {
		tb.Cleanup(r.Stop)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return r.Addr()
}

// ping asks the server at addr for PING, which it answers once it has loaded its data.
func ping(ctx context.Context, addr string) error {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	return c.Ping(ctx).Err()
}
