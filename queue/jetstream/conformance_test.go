package jetstream_test

import (
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
	"github.com/corral-go/corral/queue/queuetest"
)

// newBackendFunc returns a queuetest backend factory on one server: each subtest gets a queue
// with a fresh name, closed (and its streams deleted) when the subtest ends.
func newBackendFunc(t *testing.T, opts ...jetstream.Option) func(t *testing.T) queue.Backend {
	srv := natstest.Start(t)
	return func(t *testing.T) queue.Backend {
		nc := srv.Connect(t)
		js, err := natsjs.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		name := natstest.Prefix(t)
		b, err := jetstream.New(js, name, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = b.Close()
			deleteStreams(t, js, name)
		})
		return b
	}
}

func TestConformance(t *testing.T) {
	queuetest.Run(t, newBackendFunc(t), queuetest.Capabilities{RealTime: true, Unit: 100 * time.Millisecond})
}
