// Command outbox is the transactional-outbox pattern on corral's Postgres queue: a sign-up
// writes its user and enqueues the welcome email in one transaction (a rolled-back sign-up
// leaves neither), and the email job records that it was sent and acks itself in one
// transaction (a send recorded exactly once, however often the handler runs).
//
// It runs against the database that CORRAL_POSTGRES_URL names, or else a throwaway server it
// starts itself from Debian's postgresql package (apt-get install postgresql):
//
//	go run ./examples/outbox
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/postgres"
	"github.com/corral-go/corral/queue/postgres/internal/pgtest"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "outbox:", err)
		os.Exit(1)
	}
}

// run connects (or starts a throwaway server), signs up three users, one of whose sign-ups
// fails and rolls back, sends the welcome emails, and prints what happened to w.
func run(ctx context.Context, w io.Writer) error {
	dsn := os.Getenv("CORRAL_POSTGRES_URL")
	if dsn == "" {
		srv, err := pgtest.Launch()
		if err != nil {
			return err
		}
		defer srv.Stop()
		dsn = srv.DSN()
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := postgres.Migrate(ctx, pool); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `
		CREATE TABLE IF NOT EXISTS users (email text PRIMARY KEY);
		CREATE TABLE IF NOT EXISTS sent (email text PRIMARY KEY, at timestamptz NOT NULL)`); err != nil {
		return err
	}
	b := postgres.New(pool, "welcome-emails")
	q, err := queue.New[string](ctx, queue.WithBackend(b))
	if err != nil {
		return err
	}
	defer q.Close(ctx)

	for _, email := range []string{"ada@example.com", "bad@@example", "grace@example.com"} {
		if err := signUp(ctx, pool, b, q, email); err != nil {
			fmt.Fprintf(w, "sign-up of %s failed, rolled back: %v\n", email, err)
		}
	}

	done := make(chan struct{}, 3)
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		// Sending the email would happen here: at least once. The record of it is
		// committed with the ack: exactly once.
		if _, err := tx.Exec(ctx, `INSERT INTO sent VALUES ($1, now())`, j.Payload); err != nil {
			return err
		}
		if err := postgres.AckTx(ctx, tx, b, j); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		done <- struct{}{}
		return nil
	}, queue.WithWorkers(2))
	if err != nil {
		return err
	}
	for range 2 {
		select {
		case <-done:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if _, err := c.Drain(ctx); err != nil {
		return err
	}
	rows, err := pool.Query(ctx, `SELECT u.email, s.email IS NOT NULL FROM users u LEFT JOIN sent s USING (email) ORDER BY u.email`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var email string
		var sent bool
		if err := rows.Scan(&email, &sent); err != nil {
			return err
		}
		fmt.Fprintf(w, "user %s: welcome email sent %v\n", email, sent)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "jobs left: %d\n", s.Ready+s.InFlight+s.Delayed)
	return nil
}

var errBadEmail = errors.New("not an email address")

// signUp writes the user and enqueues the welcome email in one transaction: both or neither.
func signUp(ctx context.Context, pool *pgxpool.Pool, b *postgres.Backend, q *queue.Queue[string], email string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) // a no-op after Commit
	if _, err := tx.Exec(ctx, `INSERT INTO users VALUES ($1) ON CONFLICT DO NOTHING`, email); err != nil {
		return err
	}
	if _, err := postgres.EnqueueTx(ctx, tx, b, q, email, queue.WithID("welcome:"+email)); err != nil {
		return err
	}
	if n := len(email); n < 3 || countAt(email) != 1 {
		return errBadEmail // found after the writes: the rollback takes the user and the job back
	}
	return tx.Commit(ctx)
}

func countAt(s string) int {
	n := 0
	for _, r := range s {
		if r == '@' {
			n++
		}
	}
	return n
}
