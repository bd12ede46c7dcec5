package jetstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/readmetest"
	"github.com/corral-go/corral/queue"
	corraljs "github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

// The snippet of queue/jetstream/README.md, as written there, against a test server (one node,
// so one replica instead of three).
func TestREADMESnippet(t *testing.T) {
	type Order struct{ ID string }
	srv := natstest.Start(t)
	name := natstest.Prefix(t)
	ctx := context.Background()
	shutdownCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	var s queue.Stats
	err := func() error {
		nc, err := nats.Connect(srv.URLs()) // a cluster: list its servers
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := natsjs.New(nc)
		if err != nil {
			return err
		}
		b := corraljs.New(js, name, corraljs.WithReplicas(1)) // no I/O: queue.New opens it
		q, err := queue.New[Order](ctx, queue.WithBackend(b), queue.WithCapacity(10_000), queue.WithDedupHorizon(time.Hour))
		if err != nil {
			return err
		}
		defer q.Close(shutdownCtx) // the queue owns b: this closes it too
		// Enqueue, Consume, Drain, DeadLetters, Redrive, Stats: exactly as in memory.
		if _, err := q.Enqueue(ctx, Order{"o-1"}, queue.WithID("o-1")); err != nil {
			return err
		}
		s, err = q.Stats(ctx)
		return err
	}()
	if err != nil || s.Enqueued != 1 || s.Ready != 1 {
		t.Errorf("stats %+v, %v; want one job enqueued and ready", s, err)
	}
}

// README.md's snippets are the ones the tests above run (see internal/readmetest).
func TestREADMEInStep(t *testing.T) {
	readmetest.Check(t, "README.md", []string{"readme_test.go"},
		// The test runs on one throwaway server (one replica), under a queue name of its own.
		`nc, err := nats.Connect("nats://a:4222,nats://b:4222,nats://c:4222") // a cluster: list its servers`,
		`b := corraljs.New(js, "orders", corraljs.WithReplicas(3)) // no I/O: queue.New opens it`,
	)
}
