// Package brokertest starts the throwaway servers of tests that run a queue on every broker
// backend from outside the backends' modules (whose test helpers are internal to them):
// nats-server, postgres and redis-server, as processes on loopback ports through
// internal/testserver, stopped when the test ends. It is a module of its own, so that the
// clients it needs reach only the test modules that use it.
package brokertest

import (
	"context"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/internal/testserver"
)

// StartNATS starts a nats-server with JetStream and returns its URL.
func StartNATS(t *testing.T) string {
	t.Helper()
	return StartNATSFor(t)
}

// StartNATSFor is StartNATS for a benchmark, or any testing.TB.
func StartNATSFor(t testing.TB) string {
	t.Helper()
	paths, err := testserver.Binary{Pkg: "brokertest", Names: []string{"nats-server"}, Env: "CORRAL_NATS_SERVER",
		Package: "nats-server"}.Find()
	if err != nil {
		t.Fatal(err)
	}
	port, err := testserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	s := testserver.New(testserver.Spec{Pkg: "brokertest", Path: paths[0],
		Args: []string{"-js", "-sd", filepath.Join(dir, "store"), "-a", "127.0.0.1", "-p", strconv.Itoa(port)},
		Log:  filepath.Join(dir, "server.log"),
		Ready: func(ctx context.Context) error {
			nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.NoReconnect())
			if err != nil {
				return err
			}
			defer nc.Close()
			js, err := natsjs.New(nc)
			if err != nil {
				return err
			}
			_, err = js.AccountInfo(ctx)
			return err
		}})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(syscall.SIGTERM, 10*time.Second) })
	if err := s.WaitReady(); err != nil {
		t.Fatal(err)
	}
	return url
}

// StartPostgres starts a PostgreSQL server and returns a DSN of its database.
func StartPostgres(t *testing.T) string {
	t.Helper()
	p, err := testserver.StartPostgres("brokertest", func(ctx context.Context, dsn string) error {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "SELECT 1")
		return err
	})
	if p != nil {
		t.Cleanup(p.Stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p.DSN()
}

// StartRedis starts a redis-server and returns its address.
func StartRedis(t *testing.T) string {
	t.Helper()
	r, err := testserver.StartRedis("brokertest", "", func(ctx context.Context, addr string) error {
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		defer c.Close()
		return c.Ping(ctx).Err()
	})
	if r != nil {
		t.Cleanup(r.Stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	return r.Addr()
}
