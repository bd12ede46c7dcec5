package jetstream_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

// TestConcurrentOpenCluster opens one new queue from several processes' worth of connections at
// once, each to a different node of a three-node cluster: every Open succeeds (a cluster
// reports the others' concurrent creation of the same stream as overlapping subjects or a name
// in use, and drops unanswered a request to a stream whose leader is not elected yet), and
// the queue works for all of them.
func TestConcurrentOpenCluster(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	const openers, rounds = 6, 3
	var conns []natsjs.JetStream
	for i := range openers {
		nc, err := nats.Connect(c.Nodes[i%len(c.Nodes)].URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := natsjs.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, js)
	}
	for range rounds {
		name := natstest.Prefix(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		qs := make([]*queue.Queue[string], openers)
		errs := make([]error, openers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, js := range conns {
			wg.Go(func() {
				<-start
				qs[i], errs[i] = queue.New[string](ctx, queue.WithBackend(jetstream.New(js, name, jetstream.WithReplicas(3))))
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("opener %d (node %d): %v", i, i%len(c.Nodes), err)
			}
		}
		for i, q := range qs {
			if q == nil {
				continue
			}
			if _, err := q.Enqueue(ctx, "x"); err != nil {
				t.Errorf("opener %d: Enqueue: %v", i, err)
			}
		}
		if q := qs[0]; q != nil {
			s, err := q.Stats(ctx)
			if want := openers - countErrs(errs); err != nil || s.Ready != want {
				t.Errorf("Stats = %+v, %v; want %d ready", s, err, want)
			}
		}
		for _, q := range qs {
			if q != nil {
				if err := q.Close(ctx); err != nil {
					t.Error(err)
				}
			}
		}
		cancel()
		deleteStreams(t, conns[0], name)
		if t.Failed() {
			return
		}
	}
}

func countErrs(errs []error) int {
	n := 0
	for _, err := range errs {
		if err != nil {
			n++
		}
	}
	return n
}

// Two Opens of one Backend at once: one opens it, the other (which waits for the first, since
// Open holds no lock that other calls need across its requests) finds it opened.
func TestConcurrentOpenOfOneBackend(t *testing.T) {
	c := natstest.Start(t)
	nc := c.Connect(t)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := natstest.Prefix(t)
	t.Cleanup(func() { deleteStreams(t, js, name) })
	b := jetstream.New(js, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range errs {
		wg.Go(func() {
			<-start
			errs[i] = b.Open(ctx, driver.Config{})
		})
	}
	close(start)
	wg.Wait()
	var opened, refused int
	for _, err := range errs {
		switch {
		case err == nil:
			opened++
		case err.Error() == "jetstream: backend already opened":
			refused++
		default:
			t.Errorf("Open: %v", err)
		}
	}
	if opened != 1 || refused != 1 {
		t.Errorf("%d Opens succeeded and %d were refused as already opened; want 1 and 1 (errors %v)", opened, refused, errs)
	}
	if err := b.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}
