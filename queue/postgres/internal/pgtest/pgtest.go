// Package pgtest starts throwaway PostgreSQL servers for tests: initdb into a temporary
// directory, a random loopback port, the unix socket in the same directory, fsync off, run as
// the unprivileged user postgres when the test runs as root. The server is stopped when the
// test ends (also when it fails) and its directory removed; a program or a TestMain starts one
// with Launch and stops it with Stop.
//
// The binaries are Debian's (`apt-get install postgresql`), found at
// /usr/lib/postgresql/<version>/bin, the newest version first, or in the directory that
// CORRAL_POSTGRES_BIN names. Without them a test fails, saying what to install: it never skips.
//
// The server is a real process, so a test can SIGKILL it (Kill, with every backend process
// it forked, so that the data directory can be started again), start it again on the same
// data directory and port (Restart), and stop and resume it (Pause, Continue). The process
// handling is corral's internal/testserver; this package adds a client's readiness check and
// testing.TB.
package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/corral-go/corral/internal/testserver"
)

// EnvBin names the environment variable that selects the directory of the initdb and postgres
// binaries (default: the newest /usr/lib/postgresql/*/bin).
const EnvBin = testserver.PostgresEnv

// Binaries returns the paths of initdb and postgres, or an error naming the package to install.
func Binaries() (initdb, postgres string, err error) { return testserver.PostgresBinaries("pgtest") }

// Server is one postgres process (the postmaster) and the backends it forks. Its methods are
// not safe for concurrent use, but for DSN, Running and Paused.
type Server struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int

	p *testserver.Postgres
}

// Start runs initdb in a new temporary directory and starts a server on it, on a free port of
// 127.0.0.1, and returns once it accepts connections. The server is stopped, and its directory
// removed, when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := Launch()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Launch is Start for a program or a TestMain, which has no testing.TB: the caller must call
// Stop.
func Launch() (*Server, error) {
	p, err := testserver.StartPostgres("pgtest", ping)
	if err != nil {
		if p != nil {
			p.Stop()
		}
		return nil, err
	}
	return &Server{Port: p.Port, p: p}, nil
}

// ping connects to dsn and runs a query.
func ping(ctx context.Context, dsn string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "SELECT 1")
	return err
}

// Stop stops the server, with a fast shutdown (SIGINT), which removes its shared memory, or
// SIGKILL if it is paused or has not stopped within ten seconds, and removes its directory.
// Start's Cleanup calls it.
func (s *Server) Stop() { s.p.Stop() }

// DSN returns a connection string for the database postgres as the user postgres, over TCP.
func (s *Server) DSN() string { return s.p.DSN() }

// Running reports whether the postmaster's process is alive.
func (s *Server) Running() bool { return s.p.Running() }

// Paused reports whether the server was stopped with Pause and not continued.
func (s *Server) Paused() bool { return s.p.Paused() }

// PID returns the postmaster's process ID (0 if it is not running).
func (s *Server) PID() int { return s.p.PID() }

// Children returns the process IDs of the postmaster's children (its backends and auxiliary
// processes), from /proc.
func (s *Server) Children() []int { return s.p.Children() }

// Kill sends SIGKILL to the postmaster and to every process it forked, and waits until they
// are gone: a crash, the data directory left as it was, which Restart can start again (a
// backend left running would hold the server's shared memory and stop that).
func (s *Server) Kill(tb testing.TB) {
	tb.Helper()
	if err := s.p.Kill(); err != nil {
		tb.Fatal(err)
	}
}

// Restart starts a killed server again, on its data directory and port, and returns once it
// accepts connections (after its crash recovery). It first waits until the old server's shared
// memory is released: a process still holding it would stop the new server from starting.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if err := s.p.Restart(); err != nil {
		tb.Fatal(err)
	}
}

// Pause sends SIGSTOP to the postmaster and to every process it forked: they are alive and hold
// their connections, but answer nothing, as a server stalled by its machine would.
func (s *Server) Pause(tb testing.TB) {
	tb.Helper()
	if err := s.p.Pause(); err != nil {
		tb.Fatal(err)
	}
}

// Continue sends SIGCONT to a paused server and its processes.
func (s *Server) Continue(tb testing.TB) {
	tb.Helper()
	if err := s.p.Continue(); err != nil {
		tb.Fatal(err)
	}
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string { return s.p.LogTail(n) }
