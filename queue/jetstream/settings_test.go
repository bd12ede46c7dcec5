package jetstream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

// The replica count is a shared setting too: a process asking for another is refused before
// any stream is touched; WithReconfigure changes a setting on purpose, and the stream follows.
func TestSharedSettingsReplicasAndReconfigure(t *testing.T) {
	srv := natstest.Start(t)
	name := natstest.Prefix(t)
	open := func(qopts []queue.Option, opts ...jetstream.Option) (*queue.Queue[string], error) {
		t.Helper()
		js, err := natsjs.New(srv.Connect(t))
		if err != nil {
			t.Fatal(err)
		}
		b := jetstream.New(js, name, opts...)
		t.Cleanup(func() { _ = b.Close(context.Background()) })
		return queue.New[string](context.Background(), append([]queue.Option{queue.WithBackend(b)}, qopts...)...)
	}
	hour := []queue.Option{queue.WithDedupHorizon(time.Hour)}
	if _, err := open(hour); err != nil {
		t.Fatal(err)
	}
	_, err := open(hour, jetstream.WithReplicas(3))
	if err == nil || !strings.Contains(err.Error(), "replicas 3 differs from the queue's 1") {
		t.Fatalf("Open with 3 replicas of a queue with 1: %v, want an error naming replicas 3 and 1", err)
	}
	if _, err := open([]queue.Option{queue.WithDedupHorizon(2 * time.Hour)}, jetstream.WithReconfigure()); err != nil {
		t.Fatalf("Open WithReconfigure: %v", err)
	}
	js, err := natsjs.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(context.Background(), "CORRAL_"+name)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.Duplicates; got != 2*time.Hour {
		t.Errorf("duplicate window after the reconfiguration %v, want 2h", got)
	}
	if _, err := open(hour); err == nil || !strings.Contains(err.Error(), "dedup horizon 1h0m0s differs from the queue's 2h0m0s") {
		t.Errorf("Open with the old horizon after the reconfiguration: %v, want it refused", err)
	}
}
