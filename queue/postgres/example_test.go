package postgres_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx" driver

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

// examplePool returns a pool on the examples' throwaway server (in a program: your database's
// connection string) and a fresh queue name.
func examplePool() (*pgxpool.Pool, string) {
	pool, err := pgxpool.New(context.Background(), exampleDSN())
	if err != nil {
		panic(err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return pool, "emails-" + hex.EncodeToString(b[:])
}

// A queue of jobs in Postgres: the same queue.Queue code as with any backend.
func Example() {
	ctx := context.Background()
	pool, name := examplePool() // pgxpool.New(ctx, "postgres://...")
	defer pool.Close()
	// Once per database (or apply postgres.MigrationSQL() with your migration tool):
	if err := postgres.Migrate(ctx, pool); err != nil {
		panic(err)
	}
	q, err := queue.New[string](ctx, queue.WithBackend(postgres.New(pool, name)))
	if err != nil {
		panic(err)
	}
	defer q.Close(ctx) // closes the backend too; the pool stays yours
	if _, err := q.Enqueue(ctx, "welcome, ada", queue.WithID("welcome-ada")); err != nil {
		panic(err)
	}
	done := make(chan struct{})
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		fmt.Printf("%s: %s (attempt %d)\n", j.ID, j.Payload, j.Attempt)
		close(done)
		return nil
	}, queue.WithWorkers(2))
	if err != nil {
		panic(err)
	}
	<-done
	if _, err := c.Close(ctx); err != nil {
		panic(err)
	}
	// Output: welcome-ada: welcome, ada (attempt 1)
}

// A job enqueued in the transaction that writes the data it needs: no consumer sees it before
// the commit, and a rollback takes it back with the data.
func ExampleEnqueueTx() {
	ctx := context.Background()
	pool, name := examplePool()
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS signups (email text PRIMARY KEY)`); err != nil {
		panic(err)
	}
	b := postgres.New(pool, name)
	q, err := queue.New[string](ctx, queue.WithBackend(b))
	if err != nil {
		panic(err)
	}
	defer q.Close(ctx)

	signUp := func(email string, commit bool) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			panic(err)
		}
		defer tx.Rollback(ctx) // a no-op after Commit
		if _, err := tx.Exec(ctx, `INSERT INTO signups VALUES ($1) ON CONFLICT DO NOTHING`, email); err != nil {
			panic(err)
		}
		if _, err := postgres.EnqueueTx(ctx, tx, b, q, email, queue.WithID("welcome:"+email)); err != nil {
			panic(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				panic(err)
			}
		}
	}
	signUp("grace@example.com", false) // rolled back: no signup, no job
	signUp("ada@example.com", true)

	s, err := q.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("jobs ready:", s.Ready)
	// Output: jobs ready: 1
}

// Many jobs stored with one INSERT, all of them or none: each message is built by the queue's
// Message method, with the same options as Enqueue.
func ExampleEnqueueBatch() {
	ctx := context.Background()
	pool, name := examplePool()
	defer pool.Close()
	b := postgres.New(pool, name)
	q, err := queue.New[string](ctx, queue.WithBackend(b))
	if err != nil {
		panic(err)
	}
	defer q.Close(ctx)

	var msgs []driver.Message
	for _, to := range []string{"ada", "grace", "edsger"} {
		m, err := q.Message("hello, "+to, queue.WithID("hello:"+to))
		if err != nil {
			panic(err)
		}
		msgs = append(msgs, m)
	}
	if _, err := postgres.EnqueueBatch(ctx, b, msgs...); err != nil {
		panic(err)
	}
	// The same IDs again: nothing is stored, and the error lists every taken ID.
	_, err = postgres.EnqueueBatch(ctx, b, msgs[1:]...)
	var dup *postgres.DuplicateError
	fmt.Println(errors.Is(err, queue.ErrDuplicate), errors.As(err, &dup) && len(dup.IDs) == 2)

	s, err := q.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("jobs ready:", s.Ready)
	// Output:
	// true true
	// jobs ready: 3
}

// A handler that writes its result and acks its job in one transaction: the result is
// committed exactly once, however often the handler runs.
func ExampleAckTx() {
	ctx := context.Background()
	pool, name := examplePool()
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS invoices (job text PRIMARY KEY, amount int)`); err != nil {
		panic(err)
	}
	b := postgres.New(pool, name)
	q, err := queue.New[int](ctx, queue.WithBackend(b))
	if err != nil {
		panic(err)
	}
	defer q.Close(ctx)
	id, err := q.Enqueue(ctx, 42)
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[int]) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `INSERT INTO invoices VALUES ($1, $2)`, j.ID, j.Payload); err != nil {
			return err
		}
		if err := postgres.AckTx(ctx, tx, b, j); err != nil {
			return err
		}
		defer close(done)
		return tx.Commit(ctx) // the invoice and the ack, or neither
	})
	if err != nil {
		panic(err)
	}
	<-done
	if _, err := c.Close(ctx); err != nil {
		panic(err)
	}
	var amount int
	if err := pool.QueryRow(ctx, `SELECT amount FROM invoices WHERE job = $1`, id).Scan(&amount); err != nil {
		panic(err)
	}
	s, _ := q.Stats(ctx)
	fmt.Printf("invoice of %d; %d jobs stored, %d acked\n", amount, s.Ready+s.InFlight+s.Delayed, s.Acked)
	// Output: invoice of 42; 0 jobs stored, 1 acked
}

// A service on database/sql enqueues in its *sql.Tx, and a handler acks in its own, through
// SQLTx. The backend itself runs on a pgxpool.Pool, made from the same connection string.
func ExampleSQLTx() {
	ctx := context.Background()
	pool, name := examplePool()
	defer pool.Close()
	db, err := sql.Open("pgx", exampleDSN()) // the service's *sql.DB
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS parcels (queue text, id text, shipped bool)`); err != nil {
		panic(err)
	}
	b := postgres.New(pool, name)
	q, err := queue.New[string](ctx, queue.WithBackend(b))
	if err != nil {
		panic(err)
	}
	defer q.Close(ctx)

	// The parcel and the job to ship it, or neither.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		panic(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO parcels VALUES ($1, 'p1', false)`, name); err != nil {
		panic(err)
	}
	if _, err := postgres.EnqueueTx(ctx, postgres.SQLTx(tx), b, q, "p1", queue.WithID("ship:p1")); err != nil {
		panic(err)
	}
	if err := tx.Commit(); err != nil {
		panic(err)
	}

	// The parcel shipped and the job acked, or neither.
	done := make(chan struct{})
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // sql.ErrTxDone after Commit
		if _, err := tx.ExecContext(ctx, `UPDATE parcels SET shipped = true WHERE queue = $1 AND id = $2`, name, j.Payload); err != nil {
			return err
		}
		if err := postgres.AckTx(ctx, postgres.SQLTx(tx), b, j); err != nil {
			return err
		}
		defer close(done)
		return tx.Commit()
	})
	if err != nil {
		panic(err)
	}
	<-done
	if _, err := c.Close(ctx); err != nil {
		panic(err)
	}
	var shipped bool
	if err := db.QueryRowContext(ctx, `SELECT shipped FROM parcels WHERE queue = $1 AND id = 'p1'`, name).Scan(&shipped); err != nil {
		panic(err)
	}
	s, _ := q.Stats(ctx)
	fmt.Printf("shipped: %v; %d jobs stored, %d acked\n", shipped, s.Ready+s.InFlight+s.Delayed, s.Acked)
	// Output: shipped: true; 0 jobs stored, 1 acked
}

// The SQL of the migrations, for a team's own migration tool.
func ExampleMigrationSQL() {
	for _, line := range strings.Split(postgres.MigrationSQL(postgres.WithSchema("billing")), "\n") {
		if strings.HasPrefix(line, "-- 0") || strings.HasPrefix(line, "CREATE TABLE") {
			fmt.Println(line)
		}
	}
	// Output:
	// CREATE TABLE IF NOT EXISTS "billing".migrations (
	// -- 0001_jobs
	// CREATE TABLE "billing".queues (
	// CREATE TABLE "billing".jobs (
	// CREATE TABLE "billing".ids (
	// -- 0002_dead_letters
	// CREATE TABLE "billing".dead (
	// -- 0003_versions
	// -- 0004_headers
	// -- 0005_schedules
	// CREATE TABLE "billing".uniques (
	// CREATE TABLE "billing".rates (
	// -- 0006_admin
}
