package natstest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartConnectRestart(t *testing.T) {
	s := natstest.Start(t)
	nc := s.Connect(t)
	if ok, _ := nc.ConnectedServerJetStream(); !ok {
		t.Fatalf("server at %s has JetStream off", s.URL)
	}
	if !natstest.VersionAtLeast(nc, 2, 9, 0) {
		t.Fatalf("server version %q, want >= 2.9.0", nc.ConnectedServerVersion())
	}
	if natstest.VersionAtLeast(nc, 99, 0, 0) {
		t.Fatal("VersionAtLeast(99.0.0) = true")
	}
	if !s.Embedded() {
		return
	}
	s.Stop()
	s.Restart(t)
	if err := nc.Flush(); err != nil {
		// The client reconnects in the background; a flush may race it.
		t.Logf("flush right after restart: %v", err)
	}
}
