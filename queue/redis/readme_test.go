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

	var s queue.Stats
	err := func() error {
		client := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
		defer client.Close()
		q, err := queue.New[Order](ctx, queue.WithBackend(corralredis.New(client, name)))
		if err != nil {
			return err
		}
		defer q.Close(ctx)
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
		// The test runs on a throwaway server, under a queue name of its own.
		`client := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})`,
		`q, err := queue.New[Order](ctx, queue.WithBackend(corralredis.New(client, "orders")))`,
	)
}
