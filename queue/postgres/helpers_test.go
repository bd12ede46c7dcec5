package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/postgres"
	"github.com/corral-go/corral/queue/postgres/internal/pgtest"
	"github.com/corral-go/corral/queue/queuetest"
)

func TestMain(m *testing.M) {
	queuetest.ServeWorker(openFaultBackend) // returns at once unless this is a worker process
	goleak.VerifyTestMain(exampleServerStopper{m})
}

// exampleServerStopper stops the examples' server (see exampleDSN) once every test and
// example has run, before goleak looks for leaks.
type exampleServerStopper struct{ m *testing.M }

func (e exampleServerStopper) Run() int {
	code := e.m.Run()
	if exampleServer != nil {
		exampleServer.Stop()
	}
	return code
}

// The examples' server, started by the first example that needs one.
var (
	exampleOnce   sync.Once
	exampleServer *pgtest.Server
	exampleErr    error
)

// exampleDSN returns the connection string of a throwaway server, migrated, for the examples:
// they have no testing.T to start one with.
func exampleDSN() string {
	exampleOnce.Do(func() {
		exampleServer, exampleErr = pgtest.Launch()
		if exampleErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pool, err := pgxpool.New(ctx, exampleServer.DSN())
		if err != nil {
			exampleErr = err
			return
		}
		defer pool.Close()
		exampleErr = postgres.Migrate(ctx, pool)
	})
	if exampleErr != nil {
		panic(exampleErr)
	}
	return exampleServer.DSN()
}

// envURL names the environment variable of a server that the tests which need only a database
// use instead of a throwaway one (postgres://user:pass@host/db). Each such test has queues of its
// own and a schema of its own first in its search_path, for the tables it makes, so that a run
// leaves them behind but never meets an earlier run's. The tests that stop, kill or reconfigure
// a server, or name schemas, always start their own.
const envURL = "CORRAL_POSTGRES_URL"

// db returns a pool on a migrated database: the server envURL names, or else a throwaway one.
func db(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := os.Getenv(envURL)
	if url == "" {
		_, pool := startDB(t)
		return pool
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("%s: %v", envURL, err)
	}
	schema := "test_" + queueName(t)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgxpool on %s: %v", envURL, err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("a schema for the test on %s: %v", envURL, err)
	}
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate on %s: %v", envURL, err)
	}
	return pool
}

// startDB starts a throwaway server, migrated, and returns it with a pool on it, closed when
// the test ends.
func startDB(t testing.TB, opts ...postgres.Option) (*pgtest.Server, *pgxpool.Pool) {
	t.Helper()
	srv := pgtest.Start(t)
	pool := newPool(t, srv.DSN())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := postgres.Migrate(ctx, pool, opts...); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return srv, pool
}

// newPool returns a pool on dsn, closed when the test ends.
func newPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatalf("pgxpool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// queueName returns a fresh queue name.
func queueName(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "q" + hex.EncodeToString(b[:])
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// recvWithin waits for a value on ch, d at most.
func recvWithin[V any](t testing.TB, ch <-chan V, d time.Duration, what string) V {
	t.Helper()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case v := <-ch:
		return v
	case <-tm.C:
		t.Fatalf("timed out after %v waiting for %s", d, what)
		panic("unreachable")
	}
}

// quiet asserts that nothing arrives on ch within d.
func quiet[V any](t testing.TB, ch <-chan V, d time.Duration, what string) {
	t.Helper()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %s: %v", what, v)
	case <-tm.C:
	}
}
