// Package redistest starts throwaway redis-server processes for tests: a temporary directory,
// a random loopback port, the append-only file on (appendfsync always by default), no RDB
// snapshots. The server is stopped when the test ends and its directory removed;
// a program or a TestMain starts one with Launch and stops it with Stop.
//
// The binary is Debian's (`apt-get install redis-server`), found on PATH or at the path that
// CORRAL_REDIS_SERVER names. Without it a test fails, saying what to install: it never skips.
//
// The server is a real process, so a test can SIGKILL it (Kill), start it again on the same
// directory and port (Restart), and stop and resume it (Pause, Continue). The process handling
// and the settings are corral's internal/testserver; this package adds a client's readiness
// check, replicas, clusters and testing.TB.
package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/internal/testserver"
)

// EnvBin names the environment variable that selects the redis-server binary.
const EnvBin = testserver.RedisEnv

// Binary returns the path of redis-server, or an error naming the package to install.
func Binary() (string, error) { return testserver.RedisBinary("redistest") }

// Server is one redis-server process. Its methods are not safe for concurrent use.
type Server struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	// Fsync is the server's appendfsync setting: "always" or "everysec".
	Fsync string

	r *testserver.Redis
}

// Start starts a server with appendfsync fsync ("always" if empty), stopped when tb ends.
func Start(tb testing.TB, fsync string) *Server {
	tb.Helper()
	s, err := Launch(fsync)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// StartReplica starts a server that replicates master, stopped when tb ends. It returns once
// the replica has synchronised with the master.
func StartReplica(tb testing.TB, master *Server) *Server {
	tb.Helper()
	s, err := Launch(master.Fsync, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	defer c.Close()
	for deadline := time.Now().Add(time.Minute); ; {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: replica not in sync within a minute: %v\n%s", err, info)
		}
		time.Sleep(10 * time.Millisecond) // a polling pace: the server gives no other sign
	}
}

// Promote makes a replica a master (REPLICAOF NO ONE).
func (s *Server) Promote(tb testing.TB) {
	tb.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	defer c.Close()
	if err := c.Do(context.Background(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
		tb.Fatal(err)
	}
}

// Launch is Start for a program or a TestMain: the caller must call Stop. args are extra
// settings of the server.
func Launch(fsync string, args ...string) (*Server, error) {
	r, err := testserver.StartRedis("redistest", fsync, ping, args...)
	if err != nil {
		if r != nil {
			r.Stop()
		}
		return nil, err
	}
	return &Server{Port: r.Port, Fsync: r.Fsync, r: r}, nil
}

// ping asks the server at addr for PING, which it answers once it has loaded its data.
func ping(ctx context.Context, addr string) error {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	return c.Ping(ctx).Err()
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.r.Addr() }

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string { return s.r.LogTail(n) }

// Stop kills the server (if it runs) and removes its directory.
func (s *Server) Stop() { s.r.Stop() }

// Kill ends the server with SIGKILL and waits for it, leaving its directory; a server that is
// not running is left as it is.
func (s *Server) Kill(tb testing.TB) {
	if s.r.Running() {
		_ = s.r.Kill()
	}
}

// Restart starts a killed server again on its directory and port (killing it first if it
// runs), and returns once it answers.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Kill(tb)
	if err := s.r.Restart(); err != nil {
		tb.Fatal(err)
	}
}

// Pause stops the server with SIGSTOP.
func (s *Server) Pause(tb testing.TB) {
	tb.Helper()
	if err := s.r.Pause(); err != nil {
		tb.Fatal(err)
	}
}

// Continue resumes the server with SIGCONT.
func (s *Server) Continue(tb testing.TB) {
	tb.Helper()
	if err := s.r.Continue(); err != nil {
		tb.Fatal(err)
	}
}
