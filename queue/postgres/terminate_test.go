package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/postgres"
	"github.com/corral-go/corral/queue/postgres/internal/pgtest"
)

// admin connects to srv outside the backend's pool, closed at the end of the test.
func admin(t *testing.T, srv *pgtest.Server) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// terminate ends, from the server side, the connections of the other clients whose current or
// last query matches like (every one for "%"), waits until their backends have exited (so that
// a later look at pg_stat_activity does not find them dying), and returns how many.
func terminate(t *testing.T, c *pgx.Conn, like string) int {
	t.Helper()
	var n int
	err := c.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND query LIKE $1`, like).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitListening waits, ten seconds at most, until b's listener has reconnected n times and
// LISTENs (the backend exposes no event to wait on: this polls).
func waitListening(t *testing.T, b *postgres.Backend, n uint64) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for b.Reconnects() < n || !postgres.Listening(b) {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("listener reconnected %d times (listening %v), want %d", b.Reconnects(), postgres.Listening(b), n)
		}
	}
}

// TestListenConnectionTerminated: with the fallback poll an hour long, a job enqueued as the
// listening connection is terminated by the server is still handled within seconds: the
// listener reconnects and wakes every receiver, which look again.
func TestListenConnectionTerminated(t *testing.T) {
	srv, pool := startDB(t)
	ctx := context.Background()
	q, b := openQueue(t, pool, []postgres.Option{postgres.WithPollInterval(time.Hour)})
	handled := make(chan string, 10)
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error { handled <- j.Payload; return nil }, queue.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	// The consumer is up and waits: a first job goes through.
	if _, err := q.Enqueue(ctx, "warm-up"); err != nil {
		t.Fatal(err)
	}
	recvWithin(t, handled, 10*time.Second, "the first job")
	ac := admin(t, srv)
	waitListening(t, b, 0)
	for i := range 3 {
		if n := terminate(t, ac, "LISTEN%"); n != 1 {
			t.Fatalf("terminated %d listening connections, want 1", n)
		}
		if _, err := q.Enqueue(ctx, fmt.Sprint("after kill ", i)); err != nil {
			t.Fatal(err)
		}
		if got := recvWithin(t, handled, 10*time.Second, "the job enqueued as the listener died"); got != fmt.Sprint("after kill ", i) {
			t.Errorf("handled %q", got)
		}
		waitListening(t, b, uint64(i+1))
	}
}

// TestConnectionsTerminated: while a consumer works through jobs, every connection of the
// backend (the pool's and the listener's) is terminated from the server side, three times.
// Every job ends acked exactly once, or handled with its ack's answer lost (the ack may have
// committed); nothing is left stored or dead-lettered; a job is handled twice at most once
// per kill and worker; the listener reconnects after each kill.
func TestConnectionsTerminated(t *testing.T) {
	srv, pool := startDB(t)
	ctx := context.Background()
	const (
		n       = 300
		workers = 4
		kills   = 3
	)
	var (
		mu      sync.Mutex
		acked   = map[string]int{}
		handled = map[string]int{}
	)
	progress := make(chan struct{}, n*2)
	q, b := openQueue(t, pool, []postgres.Option{postgres.WithCallTimeout(2 * time.Second)},
		queue.WithHooks(queue.Hooks{OnSuccess: func(_ context.Context, e queue.Event) {
			mu.Lock()
			acked[e.ID]++
			mu.Unlock()
		}}))
	for i := range n {
		opts := []queue.EnqueueOption{queue.WithID(fmt.Sprintf("j%03d", i))}
		if i%3 == 0 {
			opts = append(opts, queue.WithKey(fmt.Sprint("k", i%7)))
		}
		if _, err := q.Enqueue(ctx, "x", opts...); err != nil {
			t.Fatal(err)
		}
	}
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		tm := time.NewTimer(2 * time.Millisecond) // the job's work
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		mu.Lock()
		handled[j.ID]++
		mu.Unlock()
		progress <- struct{}{}
		return nil
	}, queue.WithWorkers(workers), queue.WithLease(time.Second), queue.WithBackoff(backoff.Constant(0)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	ac := admin(t, srv)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(handled)
	}
	for k := range kills {
		for count() < (k+1)*n/(kills+1) {
			recvWithin(t, progress, 30*time.Second, "progress")
		}
		waitListening(t, b, uint64(k))
		if got := terminate(t, ac, "%"); got == 0 {
			t.Fatal("no connection terminated")
		}
		waitListening(t, b, uint64(k+1))
	}
	deadline := time.After(60 * time.Second)
	for {
		s, err := q.Stats(ctx)
		if err == nil && s.Ready+s.InFlight+s.Delayed == 0 && count() == n {
			break
		}
		select {
		case <-progress:
		case <-time.After(100 * time.Millisecond): // a redelivery after a lease: nothing to wait on
		case <-deadline:
			t.Fatalf("not drained: stats %+v (%v), %d of %d handled", s, err, count(), n)
		}
	}
	if _, err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	dups, unreported := 0, 0
	for i := range n {
		id := fmt.Sprintf("j%03d", i)
		switch {
		case handled[id] == 0:
			t.Errorf("job %s never handled", id)
		case acked[id] > 1:
			t.Errorf("job %s acked %d times", id, acked[id])
		case acked[id] == 0:
			unreported++ // its ack's answer was lost with its connection, after the commit
		}
		dups += max(handled[id]-1, 0)
	}
	if dups > kills*workers {
		t.Errorf("%d duplicate handlings, want at most %d (the jobs in flight at the kills)", dups, kills*workers)
	}
	if unreported > kills*workers {
		t.Errorf("%d jobs without a reported ack, want at most %d", unreported, kills*workers)
	}
	if s, err := q.Stats(ctx); err != nil || s.Dead != 0 {
		t.Errorf("stats %+v, %v: want no dead letters", s, err)
	}
	t.Logf("TERMINATE %d jobs, %d kills of every connection: %d duplicate handlings, %d acks unreported, %d listener reconnects",
		n, kills, dups, unreported, b.Reconnects())
}
