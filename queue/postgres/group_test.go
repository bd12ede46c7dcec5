package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

// sqlSignal is a pgx tracer that closes started when a statement sql is first sent.
type sqlSignal struct {
	mu      sync.Mutex
	sql     string
	started chan struct{}
}

func (s *sqlSignal) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sql != "" && data.SQL == s.sql {
		close(s.started)
		s.sql = ""
	}
	return ctx
}

func (*sqlSignal) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *sqlSignal) watch(sql string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql, s.started = sql, make(chan struct{})
	return s.started
}

// A Start or Ack whose job's row another transaction holds waits for it alone: the calls of
// the other workers, made together, go on meanwhile. Once the transaction ends, it succeeds.
func TestGroupedCallsSkipHeldRows(t *testing.T) {
	srv, admin := startDB(t)
	for _, call := range []string{"Start", "Ack"} {
		t.Run(call, func(t *testing.T) {
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(srv.DSN())
			if err != nil {
				t.Fatal(err)
			}
			var sig sqlSignal
			cfg.ConnConfig.Tracer = &sig
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			b := postgres.New(pool, queueName(t))
			if err := b.Open(ctx, driver.Config{}); err != nil {
				t.Fatal(err)
			}
			defer b.Close(ctx)
			var held, other driver.Delivery
			for _, id := range []string{"held", "other"} {
				if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range []*driver.Delivery{&held, &other} {
				if err := b.Receive(ctx, time.Minute, d); err != nil {
					t.Fatal(err)
				}
			}
			do := func(d *driver.Delivery) error { return b.Start(ctx, d) }
			alone, ack := postgres.SettleSQL(b)
			if call == "Ack" {
				for _, d := range []*driver.Delivery{&held, &other} {
					if err := b.Start(ctx, d); err != nil {
						t.Fatal(err)
					}
				}
				do = func(d *driver.Delivery) error { return b.Ack(ctx, d) }
				alone = ack
			}
			tx, err := admin.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `SELECT 1 FROM corral.jobs WHERE seq = $1 FOR UPDATE`, held.Token); err != nil {
				t.Fatal(err)
			}
			fallback := sig.watch(alone)
			heldErr := make(chan error, 1)
			go func() { heldErr <- do(&held) }()
			recvWithin(t, fallback, 10*time.Second, call+" of the held job, alone")
			otherErr := make(chan error, 1)
			go func() { otherErr <- do(&other) }()
			if err := recvWithin(t, otherErr, 10*time.Second, call+" of the other job"); err != nil {
				t.Fatalf("%s of the other job: %v", call, err)
			}
			select {
			case err := <-heldErr:
				t.Fatalf("%s of the held job returned %v while its row was held", call, err)
			default:
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := recvWithin(t, heldErr, 10*time.Second, call+" of the held job"); err != nil {
				t.Fatalf("%s of the held job: %v", call, err)
			}
			st, err := b.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := driver.Stats{InFlight: 2}
			if call == "Ack" {
				want = driver.Stats{}
			}
			if st.Ready != want.Ready || st.InFlight != want.InFlight || st.Delayed != want.Delayed {
				t.Errorf("stats %+v, want %+v", st, want)
			}
		})
	}
}
