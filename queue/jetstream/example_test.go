package jetstream_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
)

// A queue on JetStream: New names the queue's streams (no I/O, no error), queue.New opens them,
// and the queue's Close closes the backend, which it owns. Enqueue, handle, ack as in memory. The
// embedded server stands in for a real one; only the URL changes.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	srv, _ := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: dir,
	})
	srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	srv.ReadyForConnections(10 * time.Second)

	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	b := jetstream.New(js, "greetings")
	acked := make(chan string, 2)
	ctx := context.Background()
	q, err := queue.New[string](ctx, queue.WithBackend(b), queue.WithDedupHorizon(time.Minute),
		queue.WithHooks(queue.Hooks{OnSuccess: func(_ context.Context, e queue.Event) { acked <- e.ID }}))
	if err != nil {
		panic(err) // the server is out of reach, or the queue has other settings
	}
	defer q.Close(ctx) // closes b too

	for _, name := range []string{"Ada", "Grace"} {
		if _, err := q.Enqueue(ctx, name, queue.WithID("hello-"+name)); err != nil {
			panic(err)
		}
	}
	_, err = q.Enqueue(ctx, "Ada", queue.WithID("hello-Ada"))
	fmt.Println("again:", err)

	greetings := make(chan string, 2)
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		greetings <- "hello, " + j.Payload
		return nil
	}, queue.WithWorkers(1))
	if err != nil {
		panic(err)
	}
	fmt.Println("acked", <-acked)
	fmt.Println("acked", <-acked)
	fmt.Println(<-greetings)
	fmt.Println(<-greetings)
	if _, err := c.Close(ctx); err != nil {
		panic(err)
	}
	s, _ := q.Stats(ctx)
	fmt.Printf("stored %d, acked %d\n", s.Ready+s.InFlight+s.Delayed, s.Acked)
	// Output:
	// again: queue: duplicate job id
	// acked hello-Ada
	// acked hello-Grace
	// hello, Ada
	// hello, Grace
	// stored 0, acked 2
}
