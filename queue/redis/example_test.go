package redis_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// The examples' server, started by the first example that needs one and stopped by TestMain.
var (
	exampleOnce   sync.Once
	exampleServer *redistest.Server
	exampleErr    error
)

// exampleAddr returns the address of a throwaway server for the examples, which have no
// testing.T to start one with.
func exampleAddr() string {
	exampleOnce.Do(func() { exampleServer, exampleErr = redistest.Launch("always") })
	if exampleErr != nil {
		panic(exampleErr)
	}
	return exampleServer.Addr()
}

// A queue on Redis: the same queue code as in memory, with a Backend on a go-redis client.
func Example() {
	ctx := context.Background()
	client := goredis.NewClient(&goredis.Options{Addr: exampleAddr()})
	defer client.Close()

	q, err := queue.New[string](ctx, queue.WithBackend(redis.New(client, "greetings")))
	if err != nil {
		panic(err)
	}
	defer q.Close(ctx) // closes the backend too; the jobs stay in Redis
	if _, err := q.Enqueue(ctx, "hello", queue.WithID("greeting-1")); err != nil {
		panic(err)
	}
	c, err := q.Consume(ctx, func(ctx context.Context, job queue.Job[string]) error {
		fmt.Println(job.ID, job.Payload, "attempt", job.Attempt)
		return nil
	})
	if err != nil {
		panic(err)
	}
	if _, err := c.Drain(ctx); err != nil { // works off the backlog, then closes the consumer
		panic(err)
	}
	st, err := q.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("stored:", st.Ready+st.InFlight+st.Delayed, "dead:", st.Dead)
	// Output:
	// greeting-1 hello attempt 1
	// stored: 0 dead: 0
}

// ReceiveStart takes a job and starts its run in one script: the queue's consumers use it
// (driver.ReceiveStarter) when nothing waits between a job and its handler. A delivery not
// run after all, released here, gets its attempt back.
func ExampleBackend_ReceiveStart() {
	ctx := context.Background()
	client := goredis.NewClient(&goredis.Options{Addr: exampleAddr()})
	defer client.Close()
	b := redis.New(client, "receive-start")
	if err := b.Open(ctx, driver.Config{}); err != nil {
		panic(err)
	}
	defer b.Close(ctx)
	if _, err := b.Enqueue(ctx, driver.Message{ID: "job-1", Body: []byte("hello")}); err != nil {
		panic(err)
	}
	var d driver.Delivery
	for range 2 {
		if err := b.ReceiveStart(ctx, time.Minute, &d); err != nil {
			panic(err)
		}
		fmt.Println(d.ID, "attempt", d.Attempt, "redelivered", d.Redelivered)
		if err := b.Release(ctx, &d, 0); err != nil { // not run: the attempt comes back
			panic(err)
		}
	}
	if err := b.ReceiveStart(ctx, time.Minute, &d); err != nil {
		panic(err)
	}
	if err := b.Ack(ctx, &d); err != nil { // the handler ran and succeeded
		panic(err)
	}
	// Output:
	// job-1 attempt 1 redelivered false
	// job-1 attempt 1 redelivered true
}
