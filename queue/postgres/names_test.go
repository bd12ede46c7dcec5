package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

// A queue name Postgres cannot store (a NUL byte, invalid UTF-8) panics at New, naming the
// package and the name, instead of failing at Open.
func TestUnstorableNamePanicsAtNew(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://127.0.0.1:1/none") // no I/O until used
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const want = "the queue name must be UTF-8 without NUL bytes"
	panics(t, `postgres: New(pool, "a\x00b"): `+want, func() { postgres.New(pool, "a\x00b") })
	panics(t, `postgres: New(pool, "a\xffb"): `+want, func() { postgres.New(pool, "a\xffb") })
	panics(t, want, func() { postgres.New(pool, "\xc3") }) // a truncated sequence
}

// Every name New accepts opens and carries jobs: the odd ones too (quotes, spaces, an emoji,
// 200 bytes of multi-byte characters).
func TestOddNamesOpen(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	for _, name := range []string{
		queueName(t) + ` it's "quoted"; DROP TABLE x; --`,
		queueName(t) + " 🦀",
		queueName(t) + strings.Repeat("é", (200-13)/2),
	} {
		b := postgres.New(pool, name)
		q, err := queue.New[string](ctx, queue.WithBackend(b))
		if err != nil {
			t.Fatalf("open %q: %v", name, err)
		}
		if _, err := q.Enqueue(ctx, "x", queue.WithID("j"), queue.WithKey("k")); err != nil {
			t.Fatalf("enqueue on %q: %v", name, err)
		}
		var d driver.Delivery
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = b.Receive(rctx, time.Minute, &d)
		cancel()
		if err != nil || d.ID != "j" {
			t.Fatalf("receive on %q: %v, %q", name, err, d.ID)
		}
		if err := q.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// An ID or key Postgres cannot store is refused by the backend with an error that names the
// package and the value, not as an outage nor as a server's error.
func TestUnstorableIDRefused(t *testing.T) {
	ctx := context.Background()
	b := openBackend(t, queueName(t), driver.Config{})
	for _, m := range []driver.Message{
		{ID: "a\x00b", Body: []byte("x")},
		{ID: "a\xffb", Body: []byte("x")},
		{ID: "ok", Key: "k\x00", Body: []byte("x")},
	} {
		_, err := b.Enqueue(ctx, m)
		if err == nil || errors.Is(err, queue.ErrUnavailable) || !strings.HasPrefix(err.Error(), "postgres: enqueue: ") ||
			!strings.Contains(err.Error(), "Postgres cannot store it") || strings.Contains(err.Error(), "SQLSTATE") {
			t.Errorf("Enqueue of ID %q key %q: %v, want postgres's refusal naming it", m.ID, m.Key, err)
		}
		_, err = postgres.EnqueueBatch(ctx, b, m)
		if err == nil || !strings.Contains(err.Error(), "Postgres cannot store it") {
			t.Errorf("EnqueueBatch of ID %q key %q: %v, want postgres's refusal naming it", m.ID, m.Key, err)
		}
	}
}
