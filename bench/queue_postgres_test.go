package bench

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/corral-go/corral/bench/internal/pgserver"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

// BenchmarkQueuePostgres compares corral's queue/postgres with River on one throwaway server
// (fsync off), both migrated into the same database, with the same workers, producers, pool
// sizes and job (a 16-byte string), and River's defaults otherwise:
//
//   - handle/workers=N: b.N jobs enqueued one at a time by pgProducers (8) goroutines while N
//     workers handle them; the clock runs from the first enqueue to the last job acked (corral:
//     OnSuccess, after the ack's delete; River: the completed event, after its completer wrote
//     the completion).
//   - enqueue-batch: b.N calls that store pgBatch jobs each (corral: EnqueueBatch of messages
//     made by the queue's Message; River: InsertMany).
//   - enqueue-tx: the latency of one job enqueued in a transaction of its own: BEGIN, the
//     enqueue, COMMIT (corral: EnqueueTx; River: InsertTx).
//
// Each reports jobs/s and queries/job: the statements, batches and copies sent on the row's
// pool (and on corral's listening connection) while the clock ran, each a round trip. Both
// systems' job tables are emptied before each run. River's default FetchCooldown (100ms) caps
// a client at its workers' worth of jobs per 100ms, which the handle rows measure as River
// ships; river-cooldown=1ms repeats them with River's shortest cooldown, for River's own
// cost per job. The machine is shared: compare by ratio, with -count and benchstat.
func BenchmarkQueuePostgres(b *testing.B) {
	srv := pgserver.Start(b)
	ctx := context.Background()
	setup := newPGPool(b, srv.DSN(), 2, nil)
	if err := postgres.Migrate(ctx, setup); err != nil {
		b.Fatal(err)
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(setup), nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	reset := func(b *testing.B) {
		b.Helper()
		if _, err := setup.Exec(ctx, `TRUNCATE corral.jobs, corral.ids, corral.dead, river_job`); err != nil {
			b.Fatal(err)
		}
	}
	run := func(b *testing.B, conns, jobsPerOp int, row func(r *pgRun)) {
		reset(b)
		r := &pgRun{B: b}
		r.pool = newPGPool(b, srv.DSN(), conns, &r.queries)
		b.ReportAllocs()
		row(r)
		r.report(jobsPerOp)
	}
	for _, sys := range []struct {
		name     string
		pg       pgSystem
		handling bool // only the handle rows: the enqueue rows are the other river's
	}{
		{"corral", corralPG{}, false},
		{"river", riverPG{}, false},
		{"river-cooldown=1ms", riverPG{cooldown: river.FetchCooldownMin}, true},
	} {
		b.Run(sys.name, func(b *testing.B) {
			for _, workers := range []int{1, 8, 64} {
				b.Run("handle/workers="+strconv.Itoa(workers), func(b *testing.B) {
					run(b, workers+pgProducers+4, 1, func(r *pgRun) { sys.pg.handle(r, workers) })
				})
			}
			if sys.handling {
				return
			}
			b.Run("enqueue-batch", func(b *testing.B) {
				run(b, 4, pgBatch, sys.pg.enqueueBatch)
			})
			b.Run("enqueue-tx", func(b *testing.B) {
				run(b, 4, 1, sys.pg.enqueueTx)
			})
		})
	}
}

const (
	pgProducers = queueWorkers // the goroutines that enqueue in the handle rows (benchProduce)
	pgBatch     = 100          // the jobs of one enqueue-batch call
	pgPayload   = "0123456789abcdef"
)

// pgSystem is one of the systems compared: each method runs one row over r.N, between
// r.start and r.stop.
type pgSystem interface {
	handle(r *pgRun, workers int)
	enqueueBatch(r *pgRun)
	enqueueTx(r *pgRun)
}

// pgRun is one run of a row: its benchmark, and a pool that counts the statements sent on it.
type pgRun struct {
	*testing.B
	pool       *pgxpool.Pool
	queries    atomic.Int64 // statements, batches and copies sent on pool's connections
	from, upTo int64        // queries when the clock started and stopped
}

// start resets the clock and the count of queries.
func (r *pgRun) start() {
	r.ResetTimer()
	r.from = r.queries.Load()
}

// stop stops the clock and the count of queries.
func (r *pgRun) stop() {
	r.StopTimer()
	r.upTo = r.queries.Load()
}

// report reports jobs per second of the timed part of the run, and the queries per job
// (jobsPerOp jobs an op), each a round trip to the server.
func (r *pgRun) report(jobsPerOp int) {
	jobs := float64(r.N * jobsPerOp)
	if s := r.Elapsed().Seconds(); s > 0 {
		r.ReportMetric(jobs/s, "jobs/s")
	}
	r.ReportMetric(float64(r.upTo-r.from)/jobs, "queries/job")
}

// queryCounter is a pgx tracer that counts the statements (Exec, Query, QueryRow, and BEGIN
// and COMMIT, which pgx sends as statements), batches and copies sent.
type queryCounter struct{ n *atomic.Int64 }

func (c queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c queryCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (queryCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (queryCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (c queryCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (queryCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// newPGPool returns a pool of at most conns connections to dsn, closed when b ends; if queries
// is not nil, it counts the queries sent on them (also on the connections made from the pool's
// configuration, as corral's listener is).
func newPGPool(b *testing.B, dsn string, conns int, queries *atomic.Int64) *pgxpool.Pool {
	b.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = int32(conns)
	if queries != nil {
		cfg.ConnConfig.Tracer = queryCounter{queries}
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

var pgQueues atomic.Int64

// corralPG is corral's queue/postgres, a queue of its own (a fresh name) per run.
type corralPG struct{}

func (corralPG) open(b *testing.B, pool *pgxpool.Pool, hooks queue.Hooks) (*postgres.Backend, *queue.Queue[string]) {
	b.Helper()
	be := postgres.New(pool, "bench"+strconv.FormatInt(pgQueues.Add(1), 10))
	q, err := queue.New[string](context.Background(), queue.WithBackend(be), queue.WithHooks(hooks))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := q.Close(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return be, q
}

func (p corralPG) handle(r *pgRun, workers int) {
	b, pool := r.B, r.pool
	ctx := context.Background()
	var acked atomic.Int64
	done := make(chan struct{})
	total := int64(b.N)
	_, q := p.open(b, pool, queue.Hooks{OnSuccess: func(context.Context, queue.Event) {
		if acked.Add(1) == total {
			close(done)
		}
	}})
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		if j.Payload != pgPayload {
			panic("wrong payload " + j.Payload)
		}
		return nil
	}, queue.WithWorkers(workers))
	if err != nil {
		b.Fatal(err)
	}
	r.start()
	benchProduce(b, func(int) error {
		_, err := q.Enqueue(ctx, pgPayload)
		return err
	})
	<-done
	r.stop()
	if _, err := c.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

func (p corralPG) enqueueBatch(r *pgRun) {
	b, pool := r.B, r.pool
	ctx := context.Background()
	be, q := p.open(b, pool, queue.Hooks{})
	msgs := make([]driver.Message, pgBatch)
	r.start()
	for range b.N {
		for i := range msgs {
			m, err := q.Message(pgPayload)
			if err != nil {
				b.Fatal(err)
			}
			msgs[i] = m
		}
		if _, err := postgres.EnqueueBatch(ctx, be, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	r.stop()
}

func (p corralPG) enqueueTx(r *pgRun) {
	b, pool := r.B, r.pool
	ctx := context.Background()
	be, q := p.open(b, pool, queue.Hooks{})
	r.start()
	for range b.N {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := postgres.EnqueueTx(ctx, tx, be, q, pgPayload)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	r.stop()
}

// riverPG is River, with a client of its own per run, on the default queue, with River's
// default settings but cooldown, the FetchCooldown, if not zero. (By default a River client
// fetches jobs at most every 100ms, up to its free workers: at most 10 fetches a second.)
type riverPG struct {
	cooldown time.Duration
}

// riverArgs is the job: the payload, JSON-encoded as River stores its args.
type riverArgs struct {
	S string `json:"s"`
}

func (riverArgs) Kind() string { return "bench" }

type riverWorker struct {
	river.WorkerDefaults[riverArgs]
}

func (riverWorker) Work(ctx context.Context, j *river.Job[riverArgs]) error {
	if j.Args.S != pgPayload {
		panic("wrong payload " + j.Args.S)
	}
	return nil
}

// client returns a River client on pool, with workers workers on the default queue (none: a
// client that only inserts). Its logs are dropped.
func (p riverPG) client(b *testing.B, pool *pgxpool.Pool, workers int) *river.Client[pgx.Tx] {
	b.Helper()
	cfg := &river.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), FetchCooldown: p.cooldown}
	if workers > 0 {
		ws := river.NewWorkers()
		river.AddWorker(ws, riverWorker{})
		cfg.Workers = ws
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}}
	}
	c, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func (p riverPG) handle(r *pgRun, workers int) {
	b, pool := r.B, r.pool
	ctx := context.Background()
	c := p.client(b, pool, workers)
	events, cancel := c.SubscribeConfig(&river.SubscribeConfig{
		Kinds:    []river.EventKind{river.EventKindJobCompleted},
		ChanSize: b.N + 1, // never full: River drops the events a full channel has no room for
	})
	defer cancel()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // ends with the subscription: it is the last one
		defer close(done)
		for n := 0; n < b.N; n++ {
			if _, ok := <-events; !ok {
				return
			}
		}
	}()
	r.start()
	benchProduce(b, func(int) error {
		_, err := c.Insert(ctx, riverArgs{S: pgPayload}, nil)
		return err
	})
	<-done
	r.stop()
	stop, cancelStop := context.WithTimeout(ctx, 30*time.Second)
	defer cancelStop()
	if err := c.Stop(stop); err != nil {
		b.Fatal(err)
	}
}

func (p riverPG) enqueueBatch(r *pgRun) {
	b, pool := r.B, r.pool
	ctx := context.Background()
	c := p.client(b, pool, 0)
	params := make([]river.InsertManyParams, pgBatch)
	for i := range params {
		params[i] = river.InsertManyParams{Args: riverArgs{S: pgPayload}}
	}
	r.start()
	for range b.N {
		if _, err := c.InsertMany(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	r.stop()
}

func (p riverPG) enqueueTx(r *pgRun) {
	b, pool := r.B, r.pool
	ctx := context.Background()
	c := p.client(b, pool, 0)
	r.start()
	for range b.N {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := c.InsertTx(ctx, tx, riverArgs{S: pgPayload}, nil)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	r.stop()
}
