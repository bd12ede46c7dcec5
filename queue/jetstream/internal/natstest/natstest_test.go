package natstest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A started server has JetStream, is 2.9 or newer, and comes back on its port and its store
// after a SIGKILL and a restart, with the stream it had.
func TestStartKillRestart(t *testing.T) {
	c := natstest.Start(t)
	nc := c.Connect(t)
	if ok, _ := nc.ConnectedServerJetStream(); !ok {
		t.Fatalf("server at %s has JetStream off", c.URLs())
	}
	if !natstest.VersionAtLeast(nc, 2, 9, 0) {
		t.Fatalf("server version %q, want >= 2.9.0", nc.ConnectedServerVersion())
	}
	if natstest.VersionAtLeast(nc, 99, 0, 0) {
		t.Fatal("VersionAtLeast(99.0.0) = true")
	}
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s", []byte("x")); err != nil {
		t.Fatal(err)
	}
	n := c.Nodes[0]
	n.Kill(t)
	if n.Running() {
		t.Fatal("running after Kill")
	}
	n.Restart(t, c)
	s, err := js.Stream(ctx, "S")
	if err != nil {
		t.Fatalf("stream after restart: %v", err)
	}
	if got := s.CachedInfo().State.Msgs; got != 1 {
		t.Fatalf("stream holds %d messages after restart, want 1", got)
	}
}

// Without the binary, Binary says which package to install.
func TestBinaryMissingNamesThePackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(natstest.EnvServer, "")
	_, err := natstest.Binary()
	if err == nil || !strings.Contains(err.Error(), "apt-get install nats-server") {
		t.Fatalf("Binary() without nats-server: %v, want an error naming the package", err)
	}
}
