package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/internal/readmetest"
	"github.com/corral-go/corral/queue"
	corralredis "github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// The snippet of queue/redis/README.md, as written there, against a throwaway server instead of
// localhost:6379.
func TestREADMESnippet(t *testing.T) {
	type Order struct{ ID string }
	srv := redistest.Start(t, "always")
	name := queueName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var job queue.JobInfo[Order]
	err := func() error {
		client := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
		defer client.Close()
		q, err := queue.New[Order](ctx, queue.WithBackend(corralredis.New(client, name)))
		if err != nil {
			return err
		}
		defer q.Close(ctx)
		id, err := q.Enqueue(ctx, Order{"o-1"})
		if err != nil {
			return err
		}
		job, err = q.Inspect(ctx, id)
		return err
	}()
	if err != nil || job.State != queue.StateReady || job.Job.Payload != (Order{"o-1"}) {
		t.Errorf("the enqueued job: %+v, %v; want it ready, with its payload", job, err)
	}
}

// README.md's snippets are the ones the tests above run (see internal/readmetest).
func TestREADMEInStep(t *testing.T) {
	readmetest.Check(t, "README.md", []string{"readme_test.go"},
		// The test runs on a throwaway server, under a queue name of its own.
		`client := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})`,
		`q, err := queue.New[Order](ctx, queue.WithBackend(corralredis.New(client, "orders")))`,
	)
}
