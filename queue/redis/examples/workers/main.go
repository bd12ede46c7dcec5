// Command workers runs corral's queue on Redis Streams the way a deployment does: one producer
// and two workers, each with a client and a queue of its own (as separate processes would
// have), sharing one queue on one server. The producer enqueues twelve orders, two of them
// under the same ordering key; the workers split the work between them, and each order is
// handled once.
//
// It runs against the server that CORRAL_REDIS_ADDR names (host:port), or else a throwaway
// redis-server it starts itself from Debian's package (apt-get install redis-server):
//
//	go run ./examples/workers
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// Order is the example's job.
type Order struct {
	N        int
	Customer string
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "workers:", err)
		os.Exit(1)
	}
}

// open returns a queue of orders on its own client, as a process of its own would.
func open(ctx context.Context, addr string) (*queue.Queue[Order], func(), error) {
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	q, err := queue.New[Order](ctx, queue.WithBackend(redis.New(c, "orders")), queue.WithCapacity(1000))
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return q, func() { _ = q.Close(context.Background()); _ = c.Close() }, nil
}

// run starts (or connects to) a server, enqueues the orders from a producer, handles them
// on two workers, and prints which worker handled how many to w.
func run(ctx context.Context, w io.Writer) error {
	addr := os.Getenv("CORRAL_REDIS_ADDR")
	if addr == "" {
		srv, err := redistest.Launch("always")
		if err != nil {
			return err
		}
		defer srv.Stop()
		addr = srv.Addr()
	}
	producer, closeProducer, err := open(ctx, addr)
	if err != nil {
		return err
	}
	defer closeProducer()
	const orders = 12
	for i := range orders {
		customer := fmt.Sprintf("customer-%d", i)
		if i >= 10 {
			customer = "customer-0" // orders 0, 10 and 11 share a key: handled in that order
		}
		if _, err := producer.Enqueue(ctx, Order{N: i, Customer: customer},
			queue.WithID(fmt.Sprintf("order-%d", i)), queue.WithKey(customer)); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	handled := map[int]string{}
	var keyOrder []int // the orders of customer-0, as handled
	done := make(chan struct{})
	var consumers []*queue.Consumer[Order]
	for _, name := range []string{"worker-a", "worker-b"} {
		q, closeQ, err := open(ctx, addr)
		if err != nil {
			return err
		}
		defer closeQ()
		c, err := q.Consume(ctx, func(ctx context.Context, job queue.Job[Order]) error {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := handled[job.Payload.N]; !dup {
				handled[job.Payload.N] = name
				if job.Payload.Customer == "customer-0" {
					keyOrder = append(keyOrder, job.Payload.N)
				}
				if len(handled) == orders {
					close(done)
				}
			}
			return nil
		}, queue.WithWorkers(2))
		if err != nil {
			return err
		}
		consumers = append(consumers, c)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	for _, c := range consumers {
		if _, err := c.Drain(ctx); err != nil {
			return err
		}
	}
	mu.Lock()
	defer mu.Unlock()
	ns := make([]int, 0, len(handled))
	for n := range handled {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	per := map[string]int{}
	for _, n := range ns {
		per[handled[n]]++
	}
	fmt.Fprintf(w, "%d orders handled once each\n", len(ns))
	fmt.Fprintf(w, "customer-0's orders in enqueue order: %v\n", keyOrder)
	fmt.Fprintf(w, "split: worker-a %d, worker-b %d\n", per["worker-a"], per["worker-b"])
	st, err := producer.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "left in the queue: %d ready, %d in flight\n", st.Ready, st.InFlight)
	return nil
}
