package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

// openQueue opens a queue of strings on a new backend with a fresh name, closed at the end.
func openQueue(t *testing.T, pool *pgxpool.Pool, bopts []postgres.Option, qopts ...queue.Option) (*queue.Queue[string], *postgres.Backend) {
	t.Helper()
	b := postgres.New(pool, queueName(t), bopts...)
	q, err := queue.New[string](context.Background(), append([]queue.Option{queue.WithBackend(b)}, qopts...)...)
	if err != nil {
		t.Fatalf("queue.New: %v", err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	return q, b
}

func stored(t *testing.T, q *queue.Queue[string]) int {
	t.Helper()
	s, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.Ready + s.Delayed + s.InFlight
}

// TestEnqueueTx: a job enqueued in the caller's transaction is invisible until the commit,
// and gone on rollback; a taken ID is ErrDuplicate and leaves the transaction usable.
func TestEnqueueTx(t *testing.T) {
	pool := db(t)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE orders (id text)`); err != nil {
		t.Fatal(err)
	}
	for _, kind := range txKinds(t, pool) {
		t.Run(kind.name, func(t *testing.T) { testEnqueueTx(t, pool, kind) })
	}
}

func testEnqueueTx(t *testing.T, pool *pgxpool.Pool, kind txKind) {
	ctx := context.Background()
	// A long poll interval: a job handled promptly after the commit was notified.
	q, b := openQueue(t, pool, []postgres.Option{postgres.WithPollInterval(time.Hour)}, queue.WithDedupHorizon(time.Hour))
	handled := make(chan string, 10)
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error { handled <- j.ID; return nil }, queue.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)

	t.Run("Commit", func(t *testing.T) {
		tx, err := kind.begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES ('o1')`); err != nil {
			t.Fatal(err)
		}
		id, err := postgres.EnqueueTx(ctx, tx, b, q, "ship o1", queue.WithID("o1"), queue.WithKey("customer-1"))
		if err != nil || id != "o1" {
			t.Fatalf("EnqueueTx: %q, %v", id, err)
		}
		quiet(t, handled, 300*time.Millisecond, "job handled before the commit")
		if n := stored(t, q); n != 0 {
			t.Errorf("%d jobs visible before the commit, want 0", n)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := recvWithin(t, handled, 5*time.Second, "job after the commit"); got != "o1" {
			t.Errorf("handled %s, want o1", got)
		}
	})

	t.Run("Rollback", func(t *testing.T) {
		tx, err := kind.begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := postgres.EnqueueTx(ctx, tx, b, q, "ship o2", queue.WithID("o2")); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		quiet(t, handled, 300*time.Millisecond, "job of a rolled-back transaction")
		// Nothing of it is left: not even its ID within the horizon.
		if _, err := q.Enqueue(ctx, "ship o2 again", queue.WithID("o2")); err != nil {
			t.Errorf("Enqueue of the rolled-back job's ID: %v, want it free", err)
		}
		if got := recvWithin(t, handled, 5*time.Second, "job enqueued after the rollback"); got != "o2" {
			t.Errorf("handled %s, want o2", got)
		}
	})

	t.Run("Duplicate", func(t *testing.T) {
		tx, err := kind.begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		// o1 is within the horizon (acked); o3 is taken earlier in the same transaction.
		if _, err := postgres.EnqueueTx(ctx, tx, b, q, "again", queue.WithID("o1")); !errors.Is(err, queue.ErrDuplicate) {
			t.Errorf("EnqueueTx of an ID within the horizon: %v, want ErrDuplicate", err)
		}
		if _, err := postgres.EnqueueTx(ctx, tx, b, q, "first", queue.WithID("o3")); err != nil {
			t.Fatal(err)
		}
		if _, err := postgres.EnqueueTx(ctx, tx, b, q, "second", queue.WithID("o3")); !errors.Is(err, queue.ErrDuplicate) {
			t.Errorf("EnqueueTx of an ID taken in the same transaction: %v, want ErrDuplicate", err)
		}
		// The transaction is still usable, and commits the one job.
		if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES ('o3')`); err != nil {
			t.Fatalf("the transaction after ErrDuplicate: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := recvWithin(t, handled, 5*time.Second, "job o3"); got != "o3" {
			t.Errorf("handled %s, want o3", got)
		}
		quiet(t, handled, 300*time.Millisecond, "a second job o3")
	})

	t.Run("Closed", func(t *testing.T) {
		q2, b2 := openQueue(t, pool, nil)
		if err := q2.Close(ctx); err != nil {
			t.Fatal(err)
		}
		tx, err := kind.begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := postgres.EnqueueTx(ctx, tx, b2, q2, "x"); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("EnqueueTx on a closed queue: %v, want ErrClosed", err)
		}
	})
}

// TestEnqueueTxVersion: a job enqueued in a transaction keeps the queue's payload version.
func TestEnqueueTxVersion(t *testing.T) {
	pool := db(t)
	for _, kind := range txKinds(t, pool) {
		t.Run(kind.name, func(t *testing.T) {
			ctx := context.Background()
			q, b := openQueue(t, pool, nil, queue.WithVersion(7))
			tx, err := kind.begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := postgres.EnqueueTx(ctx, tx, b, q, "v7", queue.WithID("v7")); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			var d driver.Delivery
			if err := b.Receive(ctx, time.Minute, &d); err != nil || d.ID != "v7" || d.Version != 7 {
				t.Fatalf("Receive: %q at version %d, %v; want v7 at version 7", d.ID, d.Version, err)
			}
		})
	}
}

// TestEnqueueTxCapacity: at capacity, Reject refuses a job in the transaction with ErrFull and
// leaves the transaction usable; the count of stored jobs follows the commit or rollback.
func TestEnqueueTxCapacity(t *testing.T) {
	pool := db(t)
	for _, kind := range txKinds(t, pool) {
		t.Run(kind.name, func(t *testing.T) {
			t.Run("Rollback", func(t *testing.T) { testEnqueueTxCapacityRollback(t, pool, kind) })
			t.Run("RefusedReject", func(t *testing.T) { testEnqueueTxCapacityRefused(t, pool, kind, queue.Reject, queue.ErrFull) })
			t.Run("RefusedDropNewest", func(t *testing.T) {
				testEnqueueTxCapacityRefused(t, pool, kind, queue.DropNewest, queue.ErrDropped)
			})
			t.Run("DropOldest", func(t *testing.T) { testEnqueueTxDropOldest(t, pool, kind) })
		})
	}
}

// fillTx enqueues a and b in tx, then c, which the full queue refuses with refusal.
func fillTx(t *testing.T, tx postgres.Tx, b *postgres.Backend, q *queue.Queue[string], refusal error) {
	t.Helper()
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := postgres.EnqueueTx(ctx, tx, b, q, id, queue.WithID(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := postgres.EnqueueTx(ctx, tx, b, q, "c", queue.WithID("c")); !errors.Is(err, refusal) {
		t.Errorf("EnqueueTx at capacity: %v, want %v", err, refusal)
	}
}

// testEnqueueTxCapacityRollback: the rollback gives the room back.
func testEnqueueTxCapacityRollback(t *testing.T, pool *pgxpool.Pool, kind txKind) {
	ctx := context.Background()
	q, b := openQueue(t, pool, nil, queue.WithCapacity(2), queue.WithOverflow(queue.Reject))
	tx, err := kind.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fillTx(t, tx, b, q, queue.ErrFull)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := q.Enqueue(ctx, id, queue.WithID(id)); err != nil {
			t.Fatalf("Enqueue after the rollback: %v", err)
		}
	}
	if _, err := q.Enqueue(ctx, "c", queue.WithID("c")); !errors.Is(err, queue.ErrFull) {
		t.Errorf("Enqueue at capacity: %v, want ErrFull", err)
	}
}

// testEnqueueTxCapacityRefused: the job that the overflow policy refuses (with refusal)
// leaves nothing in the transaction, which stays usable and commits the others.
func testEnqueueTxCapacityRefused(t *testing.T, pool *pgxpool.Pool, kind txKind, policy queue.Overflow, refusal error) {
	ctx := context.Background()
	q, b := openQueue(t, pool, nil, queue.WithCapacity(2), queue.WithOverflow(policy))
	tx, err := kind.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	fillTx(t, tx, b, q, refusal)
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatalf("the transaction after %v: %v", refusal, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := stored(t, q); n != 2 {
		t.Errorf("%d jobs stored after the commit, want 2 (a, b)", n)
	}
	if _, err := q.Enqueue(ctx, "d", queue.WithID("d")); !errors.Is(err, refusal) {
		t.Errorf("Enqueue at capacity after the commit: %v, want %v", err, refusal)
	}
}

// testEnqueueTxDropOldest: DropOldest in the transaction moves the oldest jobs to the dead
// letters, and deletes the dead letters beyond the limit, all at the commit.
func testEnqueueTxDropOldest(t *testing.T, pool *pgxpool.Pool, kind txKind) {
	ctx := context.Background()
	q, b := openQueue(t, pool, nil, queue.WithCapacity(2), queue.WithOverflow(queue.DropOldest), queue.WithDeadLetterLimit(1),
		queue.WithVersion(2))
	tx, err := kind.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, id := range []string{"a", "b", "c", "d"} { // c evicts a, d evicts b (and a's dead letter goes)
		if _, err := postgres.EnqueueTx(ctx, tx, b, q, id, queue.WithID(id)); err != nil {
			t.Fatalf("EnqueueTx %s: %v", id, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := stored(t, q); n != 2 {
		t.Errorf("%d jobs stored, want 2 (c, d)", n)
	}
	var dead []string
	for dl, err := range q.DeadLetters(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		dead = append(dead, fmt.Sprintf("%s:%s:v%d", dl.Job.ID, dl.Reason, dl.Job.Version))
	}
	if fmt.Sprint(dead) != "[b:evicted:v2]" {
		t.Errorf("dead letters %v, want [b:evicted:v2]", dead)
	}
}

// TestAckTx: a handler's writes and its job's ack commit together or not at all.
func TestAckTx(t *testing.T) {
	pool := db(t)
	for _, kind := range txKinds(t, pool) {
		t.Run(kind.name, func(t *testing.T) { testAckTx(t, pool, kind) })
	}
}

// effectsTable makes a table of effects for the test of kind, and returns its name.
func effectsTable(t *testing.T, pool *pgxpool.Pool, kind txKind, columns string) string {
	t.Helper()
	name := "effects_" + strings.ReplaceAll(kind.name, "-", "_")
	if _, err := pool.Exec(context.Background(), `CREATE TABLE `+name+` (`+columns+`)`); err != nil {
		t.Fatal(err)
	}
	return name
}

func testAckTx(t *testing.T, pool *pgxpool.Pool, kind txKind) {
	ctx := context.Background()
	table := effectsTable(t, pool, kind, "job text, attempt int")
	acked := make(chan string, 10)
	q, b := openQueue(t, pool, nil, queue.WithHooks(queue.Hooks{OnSuccess: func(_ context.Context, e queue.Event) { acked <- e.ID }}))
	starts := make(chan string, 10)
	h := func(ctx context.Context, j queue.Job[string]) error {
		starts <- fmt.Sprintf("%s#%d", j.ID, j.Attempt)
		tx, err := kind.begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `INSERT INTO `+table+` VALUES ($1, $2)`, j.ID, j.Attempt); err != nil {
			return err
		}
		if err := postgres.AckTx(ctx, tx, b, j); err != nil {
			return err
		}
		switch {
		case j.Payload == "rollback-once" && j.Attempt == 1:
			_ = tx.Rollback(ctx)
			return errors.New("rolled back")
		case j.Payload == "commit-then-fail":
			if err := tx.Commit(ctx); err != nil {
				return err
			}
			return errors.New("failed after the commit")
		}
		return tx.Commit(ctx)
	}
	c, err := q.Consume(ctx, h, queue.WithWorkers(1), queue.WithBackoff(backoff.Constant(0)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	effects := func(id string) []int {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT attempt FROM `+table+` WHERE job = $1 ORDER BY attempt`, id)
		if err != nil {
			t.Fatal(err)
		}
		as, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		return as
	}

	t.Run("Commit", func(t *testing.T) {
		id, _ := q.Enqueue(ctx, "commit", queue.WithID("c1"))
		if got := recvWithin(t, acked, 5*time.Second, "ack"); got != id {
			t.Errorf("acked %s, want %s", got, id)
		}
		if got := effects(id); len(got) != 1 || got[0] != 1 {
			t.Errorf("effects %v, want one, of attempt 1", got)
		}
		if <-starts != "c1#1" {
			t.Error("first start not c1#1")
		}
	})

	t.Run("RollbackRetries", func(t *testing.T) {
		id, _ := q.Enqueue(ctx, "rollback-once", queue.WithID("r1"))
		if got := recvWithin(t, acked, 5*time.Second, "ack"); got != id {
			t.Errorf("acked %s, want %s", got, id)
		}
		if a, b := <-starts, <-starts; a != "r1#1" || b != "r1#2" {
			t.Errorf("starts %s, %s; want r1#1, r1#2", a, b)
		}
		// The first attempt's write rolled back with its ack: one effect, of attempt 2.
		if got := effects(id); len(got) != 1 || got[0] != 2 {
			t.Errorf("effects %v, want one, of attempt 2", got)
		}
	})

	t.Run("CommitThenFail", func(t *testing.T) {
		id, _ := q.Enqueue(ctx, "commit-then-fail", queue.WithID("f1"))
		if s := <-starts; s != "f1#1" {
			t.Errorf("start %s, want f1#1", s)
		}
		// The job is done at the commit: the failure after it retries nothing.
		quiet(t, starts, 500*time.Millisecond, "a retry of a job acked by its committed transaction")
		if got := effects(id); len(got) != 1 {
			t.Errorf("effects %v, want one", got)
		}
		if n := stored(t, q); n != 0 {
			t.Errorf("%d jobs stored, want 0", n)
		}
	})

	t.Run("NotRunning", func(t *testing.T) {
		tx, err := kind.begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		err = postgres.AckTx(ctx, tx, b, queue.Job[string]{ID: "nobody", Attempt: 1})
		if !errors.Is(err, queue.ErrLeaseLost) {
			t.Errorf("AckTx of a job no handler runs: %v, want ErrLeaseLost", err)
		}
	})
}

// TestAckTxHoldsTheJob drives the backend alone: while a transaction that acked the job with
// AckTx is open, the job is not delivered again even after its lease ended; once it commits,
// the job is gone and the delivery's Ack succeeds. A stale delivery's AckTx fails with
// ErrLeaseLost.
func TestAckTxHoldsTheJob(t *testing.T) {
	pool := db(t)
	for _, kind := range txKinds(t, pool) {
		t.Run(kind.name, func(t *testing.T) { testAckTxHoldsTheJob(t, pool, kind) })
	}
}

func testAckTxHoldsTheJob(t *testing.T, pool *pgxpool.Pool, kind txKind) {
	ctx := context.Background()
	b := postgres.New(pool, queueName(t), postgres.WithPollInterval(50*time.Millisecond))
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if _, err := b.Enqueue(ctx, driver.Message{ID: "J", Body: []byte("j")}); err != nil {
		t.Fatal(err)
	}
	lease := 300 * time.Millisecond
	var d driver.Delivery
	if err := b.Receive(ctx, lease, &d); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx, &d); err != nil {
		t.Fatal(err)
	}
	tx, err := kind.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	job := queue.Job[string]{ID: d.ID, Attempt: d.Attempt}
	if err := postgres.AckTx(ctx, tx, b, job); err != nil {
		t.Fatal(err)
	}
	// Past the lease, the row is still the transaction's: nobody takes the job back.
	rctx, cancel := context.WithTimeout(ctx, 3*lease)
	var d2 driver.Delivery
	err = b.Receive(rctx, lease, &d2)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive while the acking transaction is open, past the lease: %v (job %q), want nothing", err, d2.ID)
	}
	if err := b.Extend(ctx, &d, lease); err != nil {
		t.Errorf("Extend while the acking transaction holds the row: %v, want nil (the job is held)", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(ctx, &d); err != nil {
		t.Errorf("Ack after the committed AckTx: %v, want nil", err)
	}
	if s, err := b.Stats(ctx); err != nil || s.Ready+s.InFlight+s.Delayed != 0 {
		t.Errorf("stats %+v, %v: want nothing stored", s, err)
	}

	// A stale delivery: its lease ended and the job was delivered again.
	if _, err := b.Enqueue(ctx, driver.Message{ID: "K", Body: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	var s1, s2 driver.Delivery
	if err := b.Receive(ctx, lease, &s1); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx, &s1); err != nil {
		t.Fatal(err)
	}
	if err := b.Receive(ctx, lease, &s2); err != nil || s2.ID != "K" || s2.Attempt != 2 {
		t.Fatalf("redelivery: %+v, %v", s2, err)
	}
	tx2, err := kind.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback(ctx)
	if err := postgres.AckTx(ctx, tx2, b, queue.Job[string]{ID: "K", Attempt: 1}); !errors.Is(err, queue.ErrLeaseLost) {
		t.Errorf("AckTx of the stale delivery: %v, want ErrLeaseLost", err)
	}
	if err := b.Ack(ctx, &s1); !errors.Is(err, queue.ErrLeaseLost) {
		t.Errorf("Ack of the stale delivery: %v, want ErrLeaseLost", err)
	}
	if err := b.Ack(ctx, &s2); err != nil {
		t.Errorf("Ack of the current delivery: %v", err)
	}
}

// TestAckTxExactlyOnce: many jobs, handlers whose transactions fail at random before or
// after AckTx: every job's effect is committed exactly once, and every job is acked.
func TestAckTxExactlyOnce(t *testing.T) {
	pool := db(t)
	for _, kind := range txKinds(t, pool) {
		t.Run(kind.name, func(t *testing.T) { testAckTxExactlyOnce(t, pool, kind) })
	}
}

func testAckTxExactlyOnce(t *testing.T, pool *pgxpool.Pool, kind txKind) {
	ctx := context.Background()
	table := effectsTable(t, pool, kind, "job text")
	const n = 60
	var mu sync.Mutex
	acks := map[string]int{}
	done := make(chan struct{}, n)
	q, b := openQueue(t, pool, nil, queue.WithHooks(queue.Hooks{OnSuccess: func(_ context.Context, e queue.Event) {
		mu.Lock()
		acks[e.ID]++
		mu.Unlock()
		done <- struct{}{}
	}}))
	h := func(ctx context.Context, j queue.Job[string]) error {
		tx, err := kind.begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `INSERT INTO `+table+` VALUES ($1)`, j.ID); err != nil {
			return err
		}
		var i int
		fmt.Sscan(j.Payload, &i)
		if i%3 == 0 && j.Attempt == 1 {
			return errors.New("failed before AckTx") // rolled back by the defer
		}
		if err := postgres.AckTx(ctx, tx, b, j); err != nil {
			return err
		}
		if i%3 == 1 && j.Attempt == 1 {
			return errors.New("failed after AckTx, before the commit")
		}
		return tx.Commit(ctx)
	}
	for i := range n {
		if _, err := q.Enqueue(ctx, fmt.Sprint(i), queue.WithKey(fmt.Sprint(i%5))); err != nil {
			t.Fatal(err)
		}
	}
	c, err := q.Consume(ctx, h, queue.WithWorkers(4), queue.WithBackoff(backoff.Constant(0)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for range n {
		recvWithin(t, done, 30*time.Second, "ack")
	}
	var effects, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT job) FROM `+table).Scan(&effects, &distinct); err != nil {
		t.Fatal(err)
	}
	if effects != n || distinct != n {
		t.Errorf("%d effects of %d jobs, want %d of %d", effects, distinct, n, n)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, k := range acks {
		if k != 1 {
			t.Errorf("job %s acked %d times", id, k)
		}
	}
	if len(acks) != n {
		t.Errorf("%d jobs acked, want %d", len(acks), n)
	}
}
