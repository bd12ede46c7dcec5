package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/internal/readmetest"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/postgres"
)

// The snippets of queue/postgres/README.md, as written there, against a throwaway server.
func TestREADMESnippets(t *testing.T) {
	type Email struct{ To string }
	srv, _ := startDB(t)
	t.Setenv("DATABASE_URL", srv.DSN())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		stats queue.Stats
		sent  int
		users int
	)
	err := func() error {
		pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
		if err != nil {
			return err
		}
		defer pool.Close()
		if _, err := pool.Exec(ctx, `CREATE TABLE users (email text); CREATE TABLE sent (email text)`); err != nil {
			return err
		}
		// "Jobs in your Postgres"
		if err := postgres.Migrate(ctx, pool); err != nil { // or apply postgres.MigrationSQL()
			return err
		}
		b := postgres.New(pool, "emails") // no I/O: queue.New opens it
		q, err := queue.New[Email](ctx, queue.WithBackend(b), queue.WithDedupHorizon(24*time.Hour))
		if err != nil {
			return err
		}
		defer q.Close(ctx) // closes b; the pool stays yours

		// "Enqueue in your transaction"
		signUp := func(email string) error {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(ctx) // a no-op after Commit
			if _, err := tx.Exec(ctx, `INSERT INTO users (email) VALUES ($1)`, email); err != nil {
				return err
			}
			if _, err := postgres.EnqueueTx(ctx, tx, b, q, Email{To: email}, queue.WithID("welcome:"+email)); err != nil {
				return err
			}
			return tx.Commit(ctx) // the user and the job, or neither
		}
		if err := signUp("ada@example.com"); err != nil {
			return err
		}

		// "Complete in the handler's transaction"
		done := make(chan struct{})
		handler := func(ctx context.Context, j queue.Job[Email]) error {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `INSERT INTO sent (email) VALUES ($1)`, j.Payload.To); err != nil {
				return err
			}
			if err := postgres.AckTx(ctx, tx, b, j); err != nil {
				return err
			}
			defer close(done)
			return tx.Commit(ctx) // the record of the email and the ack, or neither
		}
		c, err := q.Consume(ctx, handler)
		if err != nil {
			return err
		}
		<-done
		if _, err := c.Close(ctx); err != nil {
			return err
		}

		// "On database/sql"
		db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
		if err != nil {
			return err
		}
		defer db.Close()
		signUpSQL := func(email string) error {
			tx, err := db.BeginTx(ctx, nil) // db: a *sql.DB, here of pgx's driver (github.com/jackc/pgx/v5/stdlib)
			if err != nil {
				return err
			}
			defer tx.Rollback() // sql.ErrTxDone after Commit
			if _, err := tx.ExecContext(ctx, `INSERT INTO users (email) VALUES ($1)`, email); err != nil {
				return err
			}
			if _, err := postgres.EnqueueTx(ctx, postgres.SQLTx(tx), b, q, Email{To: email}, queue.WithID("welcome:"+email)); err != nil {
				return err
			}
			return tx.Commit()
		}
		if err := signUpSQL("grace@example.com"); err != nil {
			return err
		}
		if err := signUpSQL("grace@example.com"); !errors.Is(err, queue.ErrDuplicate) {
			return fmt.Errorf("the same sign-up again: %v, want ErrDuplicate", err)
		}

		if stats, err = q.Stats(ctx); err != nil {
			return err
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&users); err != nil {
			return err
		}
		return pool.QueryRow(ctx, `SELECT count(*) FROM sent`).Scan(&sent)
	}()
	if err != nil || stats.Acked != 1 || stats.Ready != 1 || stats.InFlight != 0 || sent != 1 || users != 2 {
		t.Errorf("stats %+v, %d sent, %d users, %v; want one job acked and one ready, one email recorded, two users", stats, sent, users, err)
	}
}

// README.md's snippets are the ones the tests above run (see internal/readmetest).
func TestREADMEInStep(t *testing.T) {
	readmetest.Check(t, "README.md", []string{"readme_test.go"})
}
