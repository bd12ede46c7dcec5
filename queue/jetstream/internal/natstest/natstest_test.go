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

// Replicas shows a node's own copy of a stream and of its consumers, and a paused node as not
// serving.
func TestReplicas(t *testing.T) {
	c := natstest.Start(t)
	js, err := natsjs.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "S", Subjects: []string{"s"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "s", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := s.CreateConsumer(ctx, natsjs.ConsumerConfig{Durable: "c", AckPolicy: natsjs.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.FetchNoWait(2)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range batch.Messages() {
		if n == 0 {
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
		}
		n++
	}
	if n != 2 || batch.Error() != nil {
		t.Fatalf("fetched %d messages (%v), want 2", n, batch.Error())
	}
	name := c.Nodes[0].Name
	want := "\n" + name + ": msgs 3 seq 1-3 deleted 0; consumer c delivered 2/2 ack floor 1/1 pending 1 ack pending 1 waiting 0"
	if got := c.Replicas("S"); got != want {
		t.Errorf("Replicas:\n%q\nwant\n%q", got, want)
	}
	if got, want := c.Replicas("T"), "\n"+name+": no copy of T"; got != want {
		t.Errorf("Replicas of a missing stream: %q, want %q", got, want)
	}
	c.Nodes[0].Pause(t)
	got := c.Replicas("S")
	c.Nodes[0].Continue(t)
	if want := "\n" + name + ": not serving"; got != want {
		t.Errorf("Replicas with the node paused: %q, want %q", got, want)
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
