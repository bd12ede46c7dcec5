package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/postgres"
)

// BenchmarkQueuePostgres measures, on a throwaway server on this machine: a job enqueued,
// handled and acked (b.N jobs enqueued first, then drained by 1, 8 and 64 workers, a pool of
// as many connections plus two), and the latency of an enqueue in a transaction of its own
// (BEGIN, EnqueueTx, COMMIT). Jobs are 16-byte strings. Compare runs by ratio: the machine is
// shared.
func BenchmarkQueuePostgres(b *testing.B) {
	srv, _ := startDB(b)
	ctx := context.Background()
	for _, workers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("handle/workers=%d", workers), func(b *testing.B) {
			cfg, err := pgxpool.ParseConfig(srv.DSN())
			if err != nil {
				b.Fatal(err)
			}
			cfg.MaxConns = int32(workers + 2)
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			q, err := queue.New[string](ctx, queue.WithBackend(postgres.New(pool, queueName(b))))
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close(ctx)
			for range b.N {
				if _, err := q.Enqueue(ctx, "0123456789abcdef"); err != nil {
					b.Fatal(err)
				}
			}
			done := make(chan struct{}, b.N)
			b.ResetTimer()
			c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
				done <- struct{}{}
				return nil
			}, queue.WithWorkers(workers))
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				<-done
			}
			b.StopTimer()
			if _, err := c.Close(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("enqueue", func(b *testing.B) {
		pool := newPool(b, srv.DSN())
		q, err := queue.New[string](ctx, queue.WithBackend(postgres.New(pool, queueName(b))))
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close(ctx)
		for range b.N {
			if _, err := q.Enqueue(ctx, "0123456789abcdef"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("enqueue-tx", func(b *testing.B) {
		pool := newPool(b, srv.DSN())
		be := postgres.New(pool, queueName(b))
		q, err := queue.New[string](ctx, queue.WithBackend(be))
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close(ctx)
		for range b.N {
			tx, err := pool.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := postgres.EnqueueTx(ctx, tx, be, q, "0123456789abcdef"); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
