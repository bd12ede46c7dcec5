// Package natstest starts a JetStream-enabled NATS server for tests: embedded in the test
// process by default, or the external server named by the CORRAL_NATS_URL environment variable.
//
// The embedded server listens on a random loopback port and keeps its store in a t.TempDir(),
// so `go test ./...` needs nothing installed. Every test gets its own name prefix (Prefix) so
// that tests sharing one external server never see each other's streams.
package natstest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/queue/jetstream/internal/serverversion"
)

// EnvURL names the environment variable that selects an external server, e.g.
// CORRAL_NATS_URL=nats://127.0.0.1:4222. When it is empty, tests embed a server.
const EnvURL = "CORRAL_NATS_URL"

// Server is a JetStream server used by one test. It is not safe for concurrent use.
type Server struct {
	// URL is the client URL to connect to.
	URL string

	opts *server.Options // nil for an external server
	srv  *server.Server  // nil for an external server or while stopped
}

// Start returns the external server named by CORRAL_NATS_URL, or starts an embedded one that
// is shut down (and waited for) when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return &Server{URL: u}
	}
	opts := &server.Options{
		ServerName: "corral-test",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		NoLog:      true,
		NoSigs:     true,
		JetStream:  true,
		StoreDir:   tb.TempDir(),
		// Small limits keep the embedded server light on a shared machine.
		JetStreamMaxMemory: 256 << 20,
		JetStreamMaxStore:  1 << 30,
	}
	s := &Server{opts: opts}
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
	// Later restarts reuse the port chosen now, so clients can reconnect.
	opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	s.URL = s.srv.ClientURL()
	tb.Cleanup(s.Stop)
	return s
}

// StartEmbedded is Start that ignores CORRAL_NATS_URL: for tests that must stop and restart the
// server, which an external one does not allow.
func StartEmbedded(tb testing.TB) *Server {
	tb.Helper()
	tb.Setenv(EnvURL, "")
	return Start(tb)
}

func (s *Server) start() error {
	srv, err := server.NewServer(s.opts)
	if err != nil {
		return fmt.Errorf("natstest: new server: %w", err)
	}
	if f := os.Getenv("CORRAL_NATS_LOG"); f != "" {
		s.opts.NoLog, s.opts.LogFile = false, f
		srv.ConfigureLogger()
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fmt.Errorf("natstest: server not ready within 10s")
	}
	s.srv = srv
	return nil
}

// Embedded reports whether the server runs in this process (and so can be stopped).
func (s *Server) Embedded() bool { return s.opts != nil }

// Stop shuts the embedded server down and waits for all its goroutines. It is a no-op for an
// external server and for a stopped one.
func (s *Server) Stop() {
	if s.srv == nil {
		return
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	s.srv = nil
}

// Restart starts a stopped embedded server again on the same port with the same store.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if !s.Embedded() {
		tb.Fatal("natstest: cannot restart an external server")
	}
	if s.srv != nil {
		tb.Fatal("natstest: Restart of a running server")
	}
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
}

// Connect returns a client connection that is closed when the test ends. Extra options are
// applied after the defaults (which retry reconnecting for ever, every 50ms).
func (s *Server) Connect(tb testing.TB, opts ...nats.Option) *nats.Conn {
	tb.Helper()
	all := append([]nats.Option{
		nats.Name(tb.Name()),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(50 * time.Millisecond),
	}, opts...)
	nc, err := nats.Connect(s.URL, all...)
	if err != nil {
		tb.Fatalf("natstest: connect %s: %v", s.URL, err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// Prefix returns a fresh token, unique to this call, to name streams and subjects so that tests
// sharing one external server do not collide. It contains only [A-Z0-9].
func Prefix(tb testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	return "T" + strings.ToUpper(hex.EncodeToString(b[:]))
}

// VersionAtLeast reports whether the server nc is connected to is at least major.minor.patch.
func VersionAtLeast(nc *nats.Conn, major, minor, patch int) bool {
	return serverversion.AtLeast(nc.ConnectedServerVersion(), major, minor, patch)
}

// RequireVersion skips the test, loudly, when the connected server is older than
// major.minor.patch, naming the capability that needs it.
func RequireVersion(tb testing.TB, nc *nats.Conn, major, minor, patch int, capability string) {
	tb.Helper()
	if !VersionAtLeast(nc, major, minor, patch) {
		tb.Skipf("SKIPPED CAPABILITY %q: needs nats-server >= %d.%d.%d, connected server is %s",
			capability, major, minor, patch, nc.ConnectedServerVersion())
	}
}
