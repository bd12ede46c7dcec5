package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
	"github.com/corral-go/corral/queue/queuetest"
)

func panics(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil || !strings.Contains(r.(string), want) {
			t.Errorf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

// TestMisuse: mistakes in the program panic, naming the package and the mistake.
func TestMisuse(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://127.0.0.1:1/none") // no I/O until used
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	panics(t, "nil pool", func() { postgres.New(nil, "q") })
	panics(t, "queue name of 1 to 200 bytes", func() { postgres.New(pool, "") })
	panics(t, "queue name of 1 to 200 bytes", func() { postgres.New(pool, strings.Repeat("x", 201)) })
	panics(t, "nil option", func() { postgres.New(pool, "q", nil) })
	panics(t, `WithSchema("Bad-Name")`, func() { postgres.WithSchema("Bad-Name") })
	panics(t, "WithCallTimeout(0s)", func() { postgres.WithCallTimeout(0) })
	panics(t, "WithPollInterval(-1s)", func() { postgres.WithPollInterval(-time.Second) })
	panics(t, "zero Backend", func() { _ = new(postgres.Backend).Open(context.Background(), driver.Config{}) })
	panics(t, "nil pool", func() { _ = postgres.Migrate(context.Background(), nil) })
}

// Every exported method of a zero Backend, whatever its arguments, panics at once, in the
// caller's goroutine, saying what to use.
func TestZeroBackendPanicsSayingWhatToUse(t *testing.T) {
	queuetest.RunZeroBackend(t, new(postgres.Backend), "postgres: zero Backend: use postgres.New", nil)
}

// TestOpenUnreachable: Open against no server fails within the call timeout with an error
// matching queue.ErrUnavailable.
func TestOpenUnreachable(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	start := time.Now()
	_, err = queue.New[string](context.Background(), queue.WithBackend(postgres.New(pool, "q", postgres.WithCallTimeout(time.Second))))
	if !errorsIs(err, queue.ErrUnavailable) || time.Since(start) > 5*time.Second {
		t.Errorf("open with no server: %v after %v, want ErrUnavailable within the call timeout", err, time.Since(start))
	}
}

// TestBackendDirectUse: a backend driven without a queue refuses calls before Open, and a
// second Open.
func TestBackendDirectUse(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	b := postgres.New(pool, queueName(t))
	var d driver.Delivery
	if err := b.Receive(ctx, time.Second, &d); err == nil || !strings.Contains(err.Error(), "not opened") {
		t.Errorf("Receive before Open: %v", err)
	}
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if err := b.Open(ctx, driver.Config{}); err == nil || !strings.Contains(err.Error(), "already opened") {
		t.Errorf("second Open: %v", err)
	}
	if err := b.Receive(ctx, 0, &d); err == nil || !strings.Contains(err.Error(), "lease 0s must be positive") {
		t.Errorf("Receive with lease 0: %v", err)
	}
	if err := b.Open(ctx, driver.Config{Capacity: -1}); err == nil || !strings.Contains(err.Error(), "negative capacity") {
		t.Errorf("Open with a bad config: %v", err)
	}
}
