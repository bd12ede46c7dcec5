package bench

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/bench/internal/redisserver"
	"github.com/corral-go/corral/queue"
	corralredis "github.com/corral-go/corral/queue/redis"
)

// BenchmarkQueueRedis compares corral's queue/redis with asynq on one throwaway redis-server
// (appendfsync always), with the same producers (8 goroutines enqueueing one job at a time),
// workers and job (a 16-byte payload): b.N jobs enqueued while N workers handle them; the
// clock runs from the first enqueue to the last job done (corral: OnSuccess, after its ack;
// asynq: the handler's return of the last job, before asynq marks it done, which favours
// asynq by one round trip). Each system gets a fresh queue per run and the database is
// flushed between runs. The machine is shared: compare by ratio, with -count and benchstat.
func BenchmarkQueueRedis(b *testing.B) {
	addr := redisserver.Start(b)
	flush := func(b *testing.B) {
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		defer c.Close()
		if err := c.FlushAll(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
	}
	for _, sys := range []struct {
		name   string
		handle func(b *testing.B, addr string, workers int)
	}{
		{"corral", corralRedisHandle},
		{"asynq", asynqHandle},
	} {
		b.Run(sys.name, func(b *testing.B) {
			for _, workers := range []int{1, 8, 64} {
				b.Run("handle/workers="+strconv.Itoa(workers), func(b *testing.B) {
					flush(b)
					b.ReportAllocs()
					before := readRedisCounters(b, addr)
					sys.handle(b, addr, workers)
					reportRedisCounters(b, addr, before)
					if s := b.Elapsed().Seconds(); s > 0 {
						b.ReportMetric(float64(b.N)/s, "jobs/s")
					}
				})
			}
		})
	}
}

const redisPayload = "0123456789abcdef"

var redisQueues atomic.Int64

func corralRedisHandle(b *testing.B, addr string, workers int) {
	ctx := context.Background()
	client := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: workers + queueWorkers + 4})
	defer client.Close()
	var acked atomic.Int64
	done := make(chan struct{})
	total := int64(b.N)
	be := corralredis.New(client, "bench"+strconv.FormatInt(redisQueues.Add(1), 10))
	q, err := queue.New[string](ctx, queue.WithBackend(be), queue.WithHooks(queue.Hooks{
		OnSuccess: func(context.Context, queue.Event) {
			if acked.Add(1) == total {
				close(done)
			}
		},
	}))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := q.Close(ctx); err != nil {
			b.Error(err)
		}
	}()
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		if j.Payload != redisPayload {
			panic("wrong payload " + j.Payload)
		}
		return nil
	}, queue.WithWorkers(workers))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	benchProduce(b, func(int) error {
		_, err := q.Enqueue(ctx, redisPayload)
		return err
	})
	<-done
	b.StopTimer()
	if _, err := c.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

func asynqHandle(b *testing.B, addr string, workers int) {
	opt := asynq.RedisClientOpt{Addr: addr, PoolSize: queueWorkers + 4}
	client := asynq.NewClient(opt)
	defer client.Close()
	var handled atomic.Int64
	done := make(chan struct{})
	total := int64(b.N)
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: workers, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("bench", func(ctx context.Context, t *asynq.Task) error {
		if string(t.Payload()) != redisPayload {
			panic("wrong payload " + string(t.Payload()))
		}
		if handled.Add(1) == total {
			close(done)
		}
		return nil
	})
	if err := srv.Start(mux); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	benchProduce(b, func(int) error {
		_, err := client.Enqueue(asynq.NewTask("bench", []byte(redisPayload)))
		return err
	})
	<-done
	b.StopTimer()
	srv.Shutdown()
}
