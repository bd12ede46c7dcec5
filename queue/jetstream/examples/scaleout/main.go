// Command scaleout runs one producer and two workers on a corral queue stored in NATS
// JetStream: the same queue code as with the in-memory backend, shared by several processes
// (here, three NATS connections in one process, to stay self-contained).
//
//	cd queue/jetstream && go run ./examples/scaleout            # embedded server
//	cd queue/jetstream && go run ./examples/scaleout -url nats://127.0.0.1:4222
//
// Orders are jobs keyed by customer, so each customer's orders are handled in order while
// different customers are handled in parallel; one order fails once and is retried (the output
// shows the retry and its second attempt), one is declined for good and lands in the dead
// letters, which the producer then lists and purges, saying so.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/retry"
)

// Order is the job payload; the default codec encodes it as JSON.
type Order struct {
	Customer string
	N        int
}

func main() {
	url := flag.String("url", "", "NATS server URL (default: start an embedded server)")
	flag.Parse()
	if err := run(*url, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "scaleout:", err)
		os.Exit(1)
	}
}

const (
	customers = 3
	perCust   = 10
	queueName = "orders"
)

func run(url string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if url == "" {
		dir, err := os.MkdirTemp("", "scaleout")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		srv, err := server.NewServer(&server.Options{
			Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
			JetStream: true, StoreDir: dir,
		})
		if err != nil {
			return err
		}
		srv.Start()
		defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
		if !srv.ReadyForConnections(10 * time.Second) {
			return errors.New("nats server not ready")
		}
		url = srv.ClientURL()
		fmt.Fprintln(w, "nats: embedded JetStream server")
	}

	// Each party has its own connection and backend, as separate processes would.
	var closers []func()
	var queues []*queue.Queue[Order]
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	open := func(opts ...queue.Option) (*queue.Queue[Order], *jetstream.Backend, error) {
		nc, err := nats.Connect(url)
		if err != nil {
			return nil, nil, err
		}
		js, err := natsjs.New(nc)
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		b := jetstream.New(js, queueName)
		q, err := queue.New[Order](ctx, append([]queue.Option{queue.WithBackend(b),
			queue.WithCapacity(1000), queue.WithDedupHorizon(10 * time.Minute)}, opts...)...)
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		// The queue owns b: its Close closes b. The connection is closed last.
		closers = append(closers, func() { _ = q.Close(context.WithoutCancel(ctx)); nc.Close() })
		queues = append(queues, q)
		return q, b, nil
	}

	// The producer.
	producer, backend, err := open()
	if err != nil {
		return err
	}
	for n := range perCust {
		for c := range customers {
			o := Order{Customer: fmt.Sprintf("customer-%d", c), N: n}
			id := fmt.Sprintf("%s/order-%02d", o.Customer, n)
			if _, err := producer.Enqueue(ctx, o, queue.WithID(id), queue.WithKey(o.Customer)); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(w, "producer: enqueued %d orders for %d customers\n", customers*perCust, customers)
	_, err = producer.Enqueue(ctx, Order{Customer: "customer-0", N: 3}, queue.WithID("customer-0/order-03"))
	fmt.Fprintf(w, "producer: enqueue customer-0/order-03 again: %v\n", err)

	// Two workers.
	var (
		mu       sync.Mutex
		seen     = map[string][]int{} // customer -> order numbers, in handling order
		byWorker = map[string]int{}
		failed   bool
		retries  []string // what OnRetry reported
		retried  string   // the attempt that followed the retry
	)
	settled := make(chan struct{}, 2*customers*perCust)
	hooks := queue.WithHooks(queue.Hooks{
		OnSuccess: func(context.Context, queue.Event) { settled <- struct{}{} },
		OnDead:    func(context.Context, queue.Event) { settled <- struct{}{} },
		OnRetry: func(_ context.Context, e queue.Event) {
			mu.Lock()
			defer mu.Unlock()
			retries = append(retries, fmt.Sprintf("%s attempt %d failed (%v), retried after %v", e.ID, e.Attempt, e.Err, e.Delay))
		},
	})
	var consumers []*queue.Consumer[Order]
	for _, name := range []string{"worker-1", "worker-2"} {
		q, _, err := open(hooks)
		if err != nil {
			return err
		}
		c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[Order]) error {
			mu.Lock()
			defer mu.Unlock()
			if j.Payload.Customer == "customer-1" && j.Payload.N == 4 {
				if !failed {
					failed = true
					return errors.New("payment service timed out")
				}
				retried = fmt.Sprintf("%s attempt %d", j.ID, j.Attempt)
			}
			if j.Payload.Customer == "customer-2" && j.Payload.N == 7 {
				return retry.Permanent(errors.New("card declined"))
			}
			seen[j.Payload.Customer] = append(seen[j.Payload.Customer], j.Payload.N)
			byWorker[name]++
			return nil
		}, queue.WithWorkers(4), queue.WithLease(10*time.Second), queue.WithBackoff(backoff.Constant(50*time.Millisecond)))
		if err != nil {
			return err
		}
		consumers = append(consumers, c)
	}
	for range customers * perCust {
		select {
		case <-settled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, c := range consumers {
		if _, err := c.Close(ctx); err != nil {
			return err
		}
	}

	mu.Lock()
	defer mu.Unlock()
	handled := byWorker["worker-1"] + byWorker["worker-2"]
	fmt.Fprintf(w, "workers: %d orders handled (worker-1: %d, worker-2: %d)\n", handled, byWorker["worker-1"], byWorker["worker-2"])
	ordered := true
	for _, ns := range seen {
		ordered = ordered && slices.IsSorted(ns)
	}
	fmt.Fprintf(w, "workers: each customer's orders handled in order: %v\n", ordered)
	for _, r := range retries {
		fmt.Fprintf(w, "retry: %s\n", r)
	}
	fmt.Fprintf(w, "retry: then %s succeeded\n", retried)
	st, err := producer.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "stats: ready %d, in flight %d, delayed %d, dead letters %d\n", st.Ready, st.InFlight, st.Delayed, st.Dead)
	for dl, err := range producer.DeadLetters(ctx) {
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "dead letter: %s (%s after %d attempt): %s\n", dl.Job.ID, dl.Reason, dl.Job.Attempt, dl.History[len(dl.History)-1].Error)
		if err := producer.Purge(ctx, dl.Job.ID); err != nil {
			return err
		}
		fmt.Fprintf(w, "purged dead letter %s\n", dl.Job.ID)
	}
	if st, err = producer.Stats(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "stats after the purge: ready %d, in flight %d, delayed %d, dead letters %d\n", st.Ready, st.InFlight, st.Delayed, st.Dead)
	// Remove the queue from the server, its streams and everything in them, once every
	// process's queue (here, every party's) is closed: closing a queue closes its backend.
	for _, q := range queues {
		if err := q.Close(ctx); err != nil {
			return err
		}
	}
	return backend.Delete(ctx)
}
