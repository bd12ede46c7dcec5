package jetstream_test

import (
	"context"
	"sync"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
	"github.com/corral-go/corral/queue/queuetest"
)

// newBackendFunc returns a queuetest backend factory on one server: each subtest gets a queue
// with a fresh name, closed when the subtest ends. The streams are deleted when the parent test
// ends: deleting the last stream of an account while creating another races in the server
// (it removes the account's store directory under the new stream).
func newBackendFunc(t *testing.T, opts ...jetstream.Option) func(t *testing.T) driver.Backend {
	srv := natstest.Start(t)
	admin, err := natsjs.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		names []string
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, name := range names {
			deleteStreams(t, admin, name)
		}
	})
	return func(t *testing.T) driver.Backend {
		nc := srv.Connect(t)
		js, err := natsjs.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		name := natstest.Prefix(t)
		mu.Lock()
		names = append(names, name)
		mu.Unlock()
		b := jetstream.New(js, name, opts...)
		t.Cleanup(func() { _ = b.Close(context.Background()) })
		return b
	}
}

func TestConformance(t *testing.T) {
	queuetest.Run(t, newBackendFunc(t), queuetest.Capabilities{RealTime: true, Unit: 100 * time.Millisecond, PauseWithin: jetstream.PauseWithin})
}
