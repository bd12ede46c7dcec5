package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

func TestMigrationNames(t *testing.T) {
	want := []string{"0001_jobs", "0002_dead_letters", "0003_versions", "0004_headers", "0005_schedules", "0006_admin"}
	if got := postgres.MigrationNames(); !slices.Equal(got, want) {
		t.Errorf("migrations %v, want %v", got, want)
	}
}

// latestVersion is the version of the last migration, which Open wants.
func latestVersion(t *testing.T) int {
	t.Helper()
	names := postgres.MigrationNames()
	v, err := strconv.Atoi(names[len(names)-1][:4])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSchema: opening on a schema that lacks migrations fails naming the first one to run;
// Migrate is idempotent and safe to run from several processes at once; MigrationSQL makes the
// same schema; two schemas keep two applications' queues apart.
func TestSchema(t *testing.T) {
	_, pool := startDB(t) // the default schema
	ctx := context.Background()
	open := func(schema, name string) (*queue.Queue[string], error) {
		t.Helper()
		q, err := queue.New[string](ctx, queue.WithBackend(postgres.New(pool, name, postgres.WithSchema(schema))))
		if err == nil {
			t.Cleanup(func() { _ = q.Close(ctx) })
		}
		return q, err
	}

	t.Run("NoSchema", func(t *testing.T) {
		_, err := open("nothing", "q")
		var se *postgres.SchemaError
		if !errors.As(err, &se) || se.Applied != 0 || se.Missing != "0001_jobs" || !strings.Contains(err.Error(), "0001_jobs") ||
			!strings.Contains(err.Error(), "Migrate") {
			t.Fatalf("open on an empty schema: %v; want a SchemaError naming 0001_jobs and Migrate", err)
		}
	})

	t.Run("OlderSchema", func(t *testing.T) {
		if err := postgres.MigrateTo(ctx, pool, "older", 1); err != nil {
			t.Fatal(err)
		}
		_, err := open("older", "q")
		var se *postgres.SchemaError
		if !errors.As(err, &se) || se.Applied != 1 || se.Want != latestVersion(t) || se.Missing != "0002_dead_letters" ||
			!strings.Contains(err.Error(), "migration 0002_dead_letters is not applied") {
			t.Fatalf("open on a schema at migration 1: %v; want a SchemaError naming 0002_dead_letters", err)
		}
		if err := postgres.Migrate(ctx, pool, postgres.WithSchema("older")); err != nil {
			t.Fatal(err)
		}
		if _, err := open("older", "q"); err != nil {
			t.Fatalf("open after Migrate: %v", err)
		}
	})

	t.Run("BeforeVersions", func(t *testing.T) {
		// A schema of before payload versions: Open names the migration that adds them, and
		// a job stored before it comes back of version 0 once it is applied.
		if err := postgres.MigrateTo(ctx, pool, "unversioned", 2); err != nil {
			t.Fatal(err)
		}
		_, err := open("unversioned", "q")
		var se *postgres.SchemaError
		if !errors.As(err, &se) || se.Applied != 2 || se.Want != latestVersion(t) || se.Missing != "0003_versions" ||
			!strings.Contains(err.Error(), "migration 0003_versions is not applied") {
			t.Fatalf("open on a schema at migration 2: %v; want a SchemaError naming 0003_versions", err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO unversioned.jobs (queue, id, body, enqueued_at, ready_at)
			VALUES ('q', 'old', 'x', now(), now())`); err != nil {
			t.Fatal(err)
		}
		if err := postgres.Migrate(ctx, pool, postgres.WithSchema("unversioned")); err != nil {
			t.Fatal(err)
		}
		b := postgres.New(pool, "q", postgres.WithSchema("unversioned"))
		if err := b.Open(ctx, driver.Config{}); err != nil {
			t.Fatalf("open after Migrate: %v", err)
		}
		defer b.Close(ctx)
		var d driver.Delivery
		if err := b.Receive(ctx, time.Minute, &d); err != nil || d.ID != "old" || d.Version != 0 || string(d.Body) != "x" {
			t.Fatalf("Receive of the job stored before 0003_versions: %+v, %v; want old, version 0", d.Message, err)
		}
	})

	t.Run("BeforeHeaders", func(t *testing.T) {
		// A schema of before job headers: Open names the migration that adds them, and a job
		// and a dead letter stored before it come back without headers once it is applied.
		if err := postgres.MigrateTo(ctx, pool, "headerless", 3); err != nil {
			t.Fatal(err)
		}
		_, err := open("headerless", "q")
		var se *postgres.SchemaError
		if !errors.As(err, &se) || se.Applied != 3 || se.Missing != "0004_headers" {
			t.Fatalf("open on a schema at migration 3: %v; want a SchemaError naming 0004_headers", err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO headerless.jobs (queue, id, body, enqueued_at, ready_at)
			VALUES ('q', 'old', 'x', now(), now())`); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO headerless.dead (queue, id, body, enqueued_at, attempts, reason, history, at)
			VALUES ('q', 'gone', 'y', now(), 1, 'permanent', '[]', now())`); err != nil {
			t.Fatal(err)
		}
		if err := postgres.Migrate(ctx, pool, postgres.WithSchema("headerless")); err != nil {
			t.Fatal(err)
		}
		b := postgres.New(pool, "q", postgres.WithSchema("headerless"))
		if err := b.Open(ctx, driver.Config{}); err != nil {
			t.Fatalf("open after Migrate: %v", err)
		}
		defer b.Close(ctx)
		var d driver.Delivery
		if err := b.Receive(ctx, time.Minute, &d); err != nil || d.ID != "old" || d.Headers != nil || string(d.Body) != "x" {
			t.Fatalf("Receive of the job stored before 0004_headers: %+v, %v; want old without headers", d.Message, err)
		}
		var dead []driver.DeadMessage
		for dm, err := range b.DeadLetters(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			dead = append(dead, dm)
		}
		if len(dead) != 1 || dead[0].ID != "gone" || dead[0].Headers != nil {
			t.Fatalf("dead letters stored before 0004_headers: %+v; want gone without headers", dead)
		}
		if err := b.Redrive(ctx, "gone"); err != nil {
			t.Fatalf("Redrive of a dead letter stored before 0004_headers: %v", err)
		}
	})

	t.Run("NewerSchema", func(t *testing.T) {
		if err := postgres.Migrate(ctx, pool, postgres.WithSchema("newer")); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO newer.migrations (version, name) VALUES (99, '0099_future')`); err != nil {
			t.Fatal(err)
		}
		_, err := open("newer", "q")
		var se *postgres.SchemaError
		if !errors.As(err, &se) || se.Applied != 99 || se.Missing != "" || !strings.Contains(err.Error(), "newer than") {
			t.Fatalf("open on a schema of a newer version: %v", err)
		}
	})

	t.Run("ConcurrentMigrate", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = postgres.Migrate(ctx, pool, postgres.WithSchema("racing")) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM racing.migrations`).Scan(&n); err != nil || n != len(postgres.MigrationNames()) {
			t.Errorf("%d migrations recorded (%v), want %d", n, err, len(postgres.MigrationNames()))
		}
	})

	t.Run("MigrationSQL", func(t *testing.T) {
		sql := postgres.MigrationSQL(postgres.WithSchema("tool"))
		for _, want := range []string{`CREATE TABLE "tool".jobs`, `CREATE TABLE "tool".dead`, "-- 0001_jobs", "-- 0002_dead_letters",
			`INSERT INTO "tool".migrations (version, name) VALUES (2, '0002_dead_letters')`, "-- 0003_versions",
			`ALTER TABLE "tool".jobs ADD COLUMN version`, `INSERT INTO "tool".migrations (version, name) VALUES (3, '0003_versions')`} {
			if !strings.Contains(sql, want) {
				t.Errorf("MigrationSQL lacks %q", want)
			}
		}
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		// As a migration tool would: the whole script, in one transaction.
		if _, err := conn.Conn().PgConn().Exec(ctx, "BEGIN;\n"+sql+"\nCOMMIT;").ReadAll(); err != nil {
			t.Fatalf("running MigrationSQL: %v", err)
		}
		if _, err := open("tool", "q"); err != nil {
			t.Fatalf("open on the schema MigrationSQL made: %v", err)
		}
		if err := postgres.Migrate(ctx, pool, postgres.WithSchema("tool")); err != nil {
			t.Fatalf("Migrate after MigrationSQL: %v", err)
		}
	})

	t.Run("SchemasApart", func(t *testing.T) {
		for _, s := range []string{"app_a", "app_b"} {
			if err := postgres.Migrate(ctx, pool, postgres.WithSchema(s)); err != nil {
				t.Fatal(err)
			}
		}
		a, err := open("app_a", "jobs")
		if err != nil {
			t.Fatal(err)
		}
		bq, err := open("app_b", "jobs")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Enqueue(ctx, "x", queue.WithID("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := bq.Enqueue(ctx, "x", queue.WithID("x")); err != nil {
			t.Errorf("the same ID in another schema's queue of the same name: %v", err)
		}
		sa, _ := a.Stats(ctx)
		sb, _ := bq.Stats(ctx)
		if sa.Ready != 1 || sb.Ready != 1 {
			t.Errorf("stats %+v and %+v: want one job in each", sa, sb)
		}
	})
}

// TestSettingsShared: a second process opening a queue with other settings is refused, naming
// the setting and both values; WithReconfigure changes them.
func TestSettingsShared(t *testing.T) {
	pool := db(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := queueName(t)
	q1, err := queue.New[string](ctx, queue.WithBackend(postgres.New(pool, name)), queue.WithCapacity(10))
	if err != nil {
		t.Fatal(err)
	}
	defer q1.Close(ctx)
	_, err = queue.New[string](ctx, queue.WithBackend(postgres.New(pool, name)), queue.WithCapacity(20))
	if err == nil || !strings.Contains(err.Error(), "capacity 20 differs from the queue's 10") {
		t.Fatalf("second open with another capacity: %v", err)
	}
	q3, err := queue.New[string](ctx, queue.WithBackend(postgres.New(pool, name, postgres.WithReconfigure())), queue.WithCapacity(20))
	if err != nil {
		t.Fatalf("open WithReconfigure: %v", err)
	}
	defer q3.Close(ctx)
	if _, err := queue.New[string](ctx, queue.WithBackend(postgres.New(pool, name)), queue.WithCapacity(10)); err == nil ||
		!strings.Contains(err.Error(), "capacity 10 differs from the queue's 20") {
		t.Fatalf("open with the old capacity after the change: %v", err)
	}
}
