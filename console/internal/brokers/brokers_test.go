// Package brokers_test runs the console's browser scenarios (console/internal/browsertest) on
// the broker backends, each on a throwaway server: what an operator clicks reaches JetStream,
// Postgres and Redis as it reaches the in-memory backend. It is a module of its own, which
// nobody imports, so that the console's go.mod does not name the backends and their clients.
package brokers_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/corral-go/corral/console/internal/browsertest"
	"github.com/corral-go/corral/internal/brokertest"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/postgres"
	"github.com/corral-go/corral/queue/redis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// names gives each scenario's queue a name of its own on the shared server.
var names atomic.Int64

func name(prefix string) string { return prefix + strconv.FormatInt(names.Add(1), 10) }

func TestBrowserOnJetStream(t *testing.T) {
	url := brokertest.StartNATS(t)
	browsertest.Run(t, func(t *testing.T) driver.Backend {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := natsjs.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return jetstream.New(js, name("console"))
	})
}

func TestBrowserOnPostgres(t *testing.T) {
	dsn := brokertest.StartPostgres(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	browsertest.Run(t, func(t *testing.T) driver.Backend { return postgres.New(pool, name("console")) })
}

func TestBrowserOnRedis(t *testing.T) {
	addr := brokertest.StartRedis(t)
	browsertest.Run(t, func(t *testing.T) driver.Backend {
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		return redis.New(c, strings.ToLower(name("console")))
	})
}
