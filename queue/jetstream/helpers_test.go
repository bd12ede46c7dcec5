package jetstream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

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
