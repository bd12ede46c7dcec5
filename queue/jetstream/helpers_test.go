package jetstream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

// oneServer starts a server for t and returns a connection to it, its JetStream, a queue name
// of t's own (whose streams are deleted when t ends), and a context that ends after a minute.
func oneServer(t *testing.T) (*nats.Conn, natsjs.JetStream, string, context.Context) {
	t.Helper()
	nc := natstest.Start(t).Connect(t)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := natstest.Prefix(t)
	t.Cleanup(func() { deleteStreams(t, js, name) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return nc, js, name, ctx
}

// deleteStreams deletes the streams of queue name.
func deleteStreams(t testing.TB, js natsjs.JetStream, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for n := range js.StreamNames(ctx).Name() {
		if strings.HasPrefix(n, "CORRAL_"+name) {
			if err := js.DeleteStream(ctx, n); err != nil {
				t.Logf("delete stream %s: %v", n, err)
			}
		}
	}
}
