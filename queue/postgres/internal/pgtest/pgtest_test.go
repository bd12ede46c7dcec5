package pgtest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/postgres/internal/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func connect(t *testing.T, s *pgtest.Server) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// TestKillRestartKeepsCommits: a committed row survives a SIGKILL of the server and its
// backends; the restarted server serves on the same port and data directory.
func TestKillRestartKeepsCommits(t *testing.T) {
	s := pgtest.Start(t)
	ctx := context.Background()
	c := connect(t, s)
	if _, err := c.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Children()); n == 0 {
		t.Fatal("no backend processes found under the postmaster")
	}
	port := s.Port
	s.Kill(t)
	if s.Running() {
		t.Fatal("running after Kill")
	}
	if _, err := c.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("query on a killed server succeeded")
	}
	s.Restart(t)
	if s.Port != port {
		t.Errorf("restarted on port %d, want %d", s.Port, port)
	}
	var v int
	if err := connect(t, s).QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Errorf("after restart: %d, %v; want 42", v, err)
	}
}

// TestPauseContinue: a paused server answers nothing (a query times out); once continued it
// answers again on the same connection.
func TestPauseContinue(t *testing.T) {
	s := pgtest.Start(t)
	c := connect(t, s)
	s.Pause(t)
	if !s.Paused() {
		t.Fatal("not paused after Pause")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := c.Exec(ctx, "SELECT 1")
	cancel()
	if err == nil {
		t.Fatal("a paused server answered")
	}
	s.Continue(t)
	if s.Paused() {
		t.Fatal("paused after Continue")
	}
	// The timed-out query closed c: a new connection works.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var one int
	if err := connect(t, s).QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("after Continue: %d, %v", one, err)
	}
}

// TestMissingBinaries: without binaries the error names the Debian package.
func TestMissingBinaries(t *testing.T) {
	t.Setenv(pgtest.EnvBin, t.TempDir())
	_, _, err := pgtest.Binaries()
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Errorf("Binaries in an empty directory: %v, want an error naming the package postgresql", err)
	}
}

// TestBinariesFound: the binaries of this machine are found (the tests need them).
func TestBinariesFound(t *testing.T) {
	i, p, err := pgtest.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(i, "/initdb") || !strings.HasSuffix(p, "/postgres") {
		t.Errorf("Binaries() = %s, %s", i, p)
	}
}

// TestKillWhileConnecting: a Kill while clients open connections in a loop (the postmaster
// forking backends all the while) leaves no backend behind, so the Restart that follows at
// once starts on the data directory every time (a surviving backend would keep the shared
// memory attached: "pre-existing shared memory block is still in use").
func TestKillWhileConnecting(t *testing.T) {
	s := pgtest.Start(t)
	for range 30 {
		stop := connectLoop(t, s, 6)
		s.Kill(t)
		stop()
		s.Restart(t)
	}
	var one int
	if err := connect(t, s).QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("after the restarts: %d, %v", one, err)
	}
}

// connectLoop starts n goroutines that open and close connections to s until the returned
// stop is called (which waits for them); it returns once every goroutine has opened one, so
// that the postmaster is forking backends when it returns.
func connectLoop(t *testing.T, s *pgtest.Server, n int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	ready.Add(n)
	for range n {
		wg.Go(func() {
			first := true
			for ctx.Err() == nil {
				c, err := pgx.Connect(ctx, s.DSN())
				if err == nil {
					_ = c.Close(context.Background())
				}
				if first && (err == nil || ctx.Err() != nil) {
					first = false
					ready.Done()
				}
			}
			if first {
				ready.Done()
			}
		})
	}
	ready.Wait()
	return func() { cancel(); wg.Wait() }
}
