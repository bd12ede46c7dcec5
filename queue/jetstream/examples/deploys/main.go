// Command deploys shows the two decisions every job needs once a queue is shared by a fleet,
// on a corral queue stored in NATS JetStream:
//
//   - A rolling deploy. The Order payload changes shape at version 2 (amounts in cents). A v1
//     and a v2 consumer serve one queue while the producers move from v1 to v2; then the v1
//     consumer stops. The v1 consumer hands back the v2 orders it cannot read, without
//     spending an attempt; the v2 consumer upgrades v1 orders. Every order is handled once.
//
//   - Priorities. A user-facing queue and a bulk backfill share four workers: the users get
//     six turns for each of the backfill's while both have work, and the backfill never holds
//     more than one worker.
//
//     cd queue/jetstream && go run ./examples/deploys            # embedded server
//     cd queue/jetstream && go run ./examples/deploys -url nats://127.0.0.1:4222
//
// Each party has its own connection, backend and queue, as separate processes would.
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

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
)

// OrderV1 is the payload of version 1.
type OrderV1 struct {
	N      int
	Amount int // whole euros
}

// Order is the payload of version 2, the current one.
type Order struct {
	N     int
	Cents int64
}

func main() {
	url := flag.String("url", "", "NATS server URL (default: start an embedded server)")
	flag.Parse()
	if err := run(*url, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "deploys:", err)
		os.Exit(1)
	}
}

func run(url string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if url == "" {
		u, stop, err := embedded()
		if err != nil {
			return err
		}
		defer stop()
		url = u
	}
	f := &fleet{url: url}
	defer f.close(context.WithoutCancel(ctx))
	if err := deploy(ctx, f, w); err != nil {
		return err
	}
	return priorities(ctx, f, w)
}

// embedded starts a JetStream server on a random loopback port.
func embedded() (string, func(), error) {
	dir, err := os.MkdirTemp("", "deploys")
	if err != nil {
		return "", nil, err
	}
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: dir,
	})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	srv.Start()
	stop := func() { srv.Shutdown(); srv.WaitForShutdown(); os.RemoveAll(dir) }
	if !srv.ReadyForConnections(10 * time.Second) {
		stop()
		return "", nil, errors.New("nats server not ready")
	}
	return srv.ClientURL(), stop, nil
}

// fleet opens queues as the processes of a fleet do, each on its own connection.
type fleet struct {
	url     string
	closers []func(context.Context)
}

func open[T any](ctx context.Context, f *fleet, name string, opts ...queue.Option) (*queue.Queue[T], error) {
	nc, err := nats.Connect(f.url)
	if err != nil {
		return nil, err
	}
	js, err := natsjs.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	q, err := queue.New[T](ctx, append([]queue.Option{queue.WithBackend(jetstream.New(js, name))}, opts...)...)
	if err != nil {
		nc.Close()
		return nil, err
	}
	// The queue owns its backend: its Close closes it. The connection is closed last.
	f.closers = append(f.closers, func(ctx context.Context) { _ = q.Close(ctx); nc.Close() })
	return q, nil
}

func (f *fleet) close(ctx context.Context) {
	for _, c := range slices.Backward(f.closers) {
		c(ctx)
	}
}

// deploy plays a rolling deploy from v1 to v2 on the queue "orders".
func deploy(ctx context.Context, f *fleet, w io.Writer) error {
	v1, err := open[OrderV1](ctx, f, "orders", queue.WithVersion(1))
	if err != nil {
		return err
	}
	v2, err := open[Order](ctx, f, "orders", queue.WithVersion(2),
		queue.WithUpgrade(1, func(o OrderV1) (Order, error) { return Order{N: o.N, Cents: int64(o.Amount) * 100}, nil }))
	if err != nil {
		return err
	}
	var (
		mu      sync.Mutex
		handled = map[string][]string{} // order ID -> the consumers that handled it, "v1"/"v2"
		firstGo = true                  // every handler run was a first attempt
		upgrade int                     // v1 orders the v2 consumer handled
	)
	done := make(chan struct{}, 100)
	ran := func(id, by string, attempt int) {
		mu.Lock()
		handled[id] = append(handled[id], by)
		firstGo = firstGo && attempt == 1
		mu.Unlock()
		done <- struct{}{}
	}
	c1, err := v1.Consume(ctx, func(ctx context.Context, j queue.Job[OrderV1]) error {
		ran(j.ID, "v1", j.Attempt) // charge j.Payload.Amount euros
		return nil
	}, queue.WithWorkers(2))
	if err != nil {
		return err
	}
	c2, err := v2.Consume(ctx, func(ctx context.Context, j queue.Job[Order]) error {
		if j.Version == 1 {
			mu.Lock()
			upgrade++
			mu.Unlock()
		}
		ran(j.ID, "v2", j.Attempt) // charge j.Payload.Cents cents
		return nil
	}, queue.WithWorkers(2))
	if err != nil {
		return err
	}
	version := map[string]int{}
	enqueue := func(v, n int) error {
		var id string
		var err error
		if v == 1 {
			id, err = v1.Enqueue(ctx, OrderV1{N: n, Amount: n})
		} else {
			id, err = v2.Enqueue(ctx, Order{N: n, Cents: int64(n) * 100})
		}
		version[id] = v
		return err
	}
	wait := func(n int) error {
		for range n {
			select {
			case <-done:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	// The deploy: half the producers are at v2, then all of them.
	for n := range 20 {
		if err := enqueue(1+n%2, n); err != nil {
			return err
		}
	}
	if err := wait(20); err != nil {
		return err
	}
	if _, err := c1.Close(ctx); err != nil { // the last v1 consumer goes
		return err
	}
	for n := range 10 {
		if err := enqueue(2, 20+n); err != nil {
			return err
		}
	}
	if err := wait(10); err != nil {
		return err
	}
	if _, err := c2.Close(ctx); err != nil {
		return err
	}

	mu.Lock()
	defer mu.Unlock()
	by := map[string]int{}
	once, v2ByV1 := true, 0
	for id, v := range version {
		h := handled[id]
		once = once && len(h) == 1
		if len(h) > 0 {
			by[h[0]]++
			if v == 2 && h[0] == "v1" {
				v2ByV1++
			}
		}
	}
	st, err := v2.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "deploy: 20 orders while producers moved to v2 (10 v1, 10 v2), then 10 v2 orders after the v1 consumer stopped\n")
	fmt.Fprintf(w, "deploy: v1 consumer handled %d orders, v2 consumer %d (%d of them v1 orders, upgraded)\n", by["v1"], by["v2"], upgrade)
	fmt.Fprintf(w, "deploy: v2 orders handled by the v1 consumer: %d\n", v2ByV1)
	fmt.Fprintf(w, "deploy: every order handled once: %v, each at its first attempt: %v\n", once, firstGo)
	fmt.Fprintf(w, "deploy: dead letters %d, left in the queue %d\n", st.Dead, st.Ready+st.InFlight+st.Delayed)
	return nil
}

// priorities runs a user-facing queue and a bulk backfill on one Share of four workers.
func priorities(ctx context.Context, f *fleet, w io.Writer) error {
	users, err := open[string](ctx, f, "requests")
	if err != nil {
		return err
	}
	backfill, err := open[int](ctx, f, "backfill")
	if err != nil {
		return err
	}
	const each = 60
	for i := range each {
		if _, err := users.Enqueue(ctx, fmt.Sprint("request ", i)); err != nil {
			return err
		}
		if _, err := backfill.Enqueue(ctx, i); err != nil {
			return err
		}
	}
	var (
		mu    sync.Mutex
		turns []string
	)
	done := make(chan struct{}, 2*each)
	work := func(name string) {
		mu.Lock()
		turns = append(turns, name)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // the work
		done <- struct{}{}
	}
	sh := queue.NewShare(4, queue.Weighted)
	cu, err := users.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		work("users")
		return nil
	}, queue.WithShare(sh, "users", 6))
	if err != nil {
		return err
	}
	cb, err := backfill.Consume(ctx, func(ctx context.Context, j queue.Job[int]) error {
		work("backfill")
		return nil
	}, queue.WithShare(sh, "backfill", 1), queue.WithWorkers(1))
	if err != nil {
		return err
	}
	for range each {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	st, err := sh.Stats(ctx)
	if err != nil {
		return err
	}
	for _, s := range st {
		fmt.Fprintf(w, "share: %s (weight %d, at most %d at once): %d jobs so far, %.0f%% of the worker time, %d waiting in its queue\n",
			s.Name, s.Weight, s.Cap, s.Turns, 100*s.Share, s.Depth)
	}
	mu.Lock()
	u := 0
	for _, t := range turns[:each] {
		if t == "users" {
			u++
		}
	}
	mu.Unlock()
	fmt.Fprintf(w, "share: of the first %d jobs, %d were users' and %d the backfill's\n", each, u, each-u)
	ru, err := cu.Drain(ctx)
	if err != nil {
		return err
	}
	rb, err := cb.Drain(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "share: drained, all %d jobs handled: %v\n", 2*each, len(turns) == 2*each && ru.DeadLettered+rb.DeadLettered == 0)
	return nil
}
