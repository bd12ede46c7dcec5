// Package pgserver starts one throwaway PostgreSQL server for the benchmarks of this module:
// initdb into a temporary directory, a random loopback port, fsync off, run as the user
// postgres when the benchmark runs as root, stopped and its directory removed when the
// benchmark ends. The server, and its settings, are corral's internal/testserver, which
// queue/postgres's tests use too; this package adds a client's readiness check.
//
// The binaries are Debian's (`apt-get install postgresql`), the newest
// /usr/lib/postgresql/<version>/bin, or the directory CORRAL_POSTGRES_BIN names.
package pgserver

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/corral-go/corral/internal/testserver"
)

// Server is a running postgres process.
type Server struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int

	p *testserver.Postgres
}

// Start starts a server, stopped (and its directory removed) when tb ends; it fails tb, naming
// the package to install, if there are no server binaries.
func Start(tb testing.TB) *Server {
	tb.Helper()
	p, err := testserver.StartPostgres("pgserver", ping)
	if p != nil {
		tb.Cleanup(p.Stop)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return &Server{Port: p.Port, p: p}
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

// DSN returns a connection string for the database postgres as the user postgres, over TCP.
func (s *Server) DSN() string { return s.p.DSN() }
