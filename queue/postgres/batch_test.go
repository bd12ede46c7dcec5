package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

// msgs makes a message of q for each ID, with payload "p-"+id and opts.
func msgs(t *testing.T, q *queue.Queue[string], ids []string, opts ...queue.EnqueueOption) []driver.Message {
	t.Helper()
	out := make([]driver.Message, 0, len(ids))
	for _, id := range ids {
		m, err := q.Message("p-"+id, append([]queue.EnqueueOption{queue.WithID(id)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// idsOf returns the IDs of the jobs of b's queue, in the order of their numbers (seq).
func idsOf(t *testing.T, pool *pgxpool.Pool, b *postgres.Backend) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT id FROM corral.jobs WHERE queue = $1 ORDER BY seq`, postgres.Name(b))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// wantDuplicates checks that err is a *DuplicateError with exactly ids, matching ErrDuplicate.
func wantDuplicates(t *testing.T, err error, ids ...string) {
	t.Helper()
	var de *postgres.DuplicateError
	if !errors.As(err, &de) || !errors.Is(err, queue.ErrDuplicate) {
		t.Fatalf("err = %v, want a *DuplicateError matching queue.ErrDuplicate", err)
	}
	if !slices.Equal(de.IDs, ids) {
		t.Fatalf("DuplicateError.IDs = %q, want %q", de.IDs, ids)
	}
}

// TestEnqueueBatchFields: every field of a driver.Message is stored, each job in the batch's
// order, and the jobs are delivered as enqueued.
func TestEnqueueBatchFields(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	q, b := openQueue(t, pool, nil, queue.WithVersion(4))
	notBefore := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	startBy := time.Now().Add(2 * time.Hour).Truncate(time.Microsecond)
	batch := msgs(t, q, []string{"a", "b"}, queue.WithKey("k"))
	batch = append(batch, msgs(t, q, []string{"c"}, queue.WithNotBefore(notBefore), queue.WithStartBy(startBy))...)
	batch[2].Version = 9 // another producer's payload version
	batch[1].Headers = map[string]string{"traceparent": "t", "x": "a\nb"}
	batch = append(batch, driver.Message{ID: "d"}) // no body, no enqueue time, version 0
	if _, err := postgres.EnqueueBatch(ctx, b, batch...); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT id, coalesce(key, ''), version, body, enqueued_at, coalesce(not_before, 'epoch'), coalesce(start_by, 'epoch')
FROM corral.jobs WHERE queue = $1 ORDER BY seq`, postgres.Name(b))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id, key                 string
		version                 int
		body                    []byte
		enq, notBefore, startBy time.Time
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.id, &x.key, &x.version, &x.body, &x.enq, &x.notBefore, &x.startBy)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d jobs stored, want 4", len(got))
	}
	epoch := time.Unix(0, 0)
	for i, m := range batch[:3] {
		r := got[i]
		wantNB, wantSB := epoch, epoch
		if !m.NotBefore.IsZero() {
			wantNB, wantSB = m.NotBefore, m.StartBy
		}
		if r.id != m.ID || r.key != m.Key || r.version != m.Version || string(r.body) != string(m.Body) || !r.enq.Equal(m.EnqueuedAt.Truncate(time.Microsecond)) ||
			!r.notBefore.Equal(wantNB) || !r.startBy.Equal(wantSB) {
			t.Errorf("job %d stored as %+v, want %+v", i, r, m)
		}
	}
	if got[0].version != 4 || got[2].version != 9 {
		t.Errorf("versions stored %d, %d; want 4 (the queue's), 9 (the message's)", got[0].version, got[2].version)
	}
	if d := got[3]; d.id != "d" || d.version != 0 || len(d.body) != 0 || time.Since(d.enq) > time.Minute || !d.notBefore.Equal(epoch) {
		t.Errorf("job d stored as %+v", d)
	}
	s, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Ready != 3 || s.Delayed != 1 || s.Enqueued != 0 {
		t.Errorf("Stats: %d ready, %d delayed, %d enqueued; want 3, 1, 0 (a batch is not counted by the queue)", s.Ready, s.Delayed, s.Enqueued)
	}
	handled := make(chan string, 4)
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		handled <- fmt.Sprintf("%s=%s/%s/v%d %v", j.ID, j.Payload, j.Key, j.Version, j.Headers)
		return nil
	}, queue.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, want := range []string{"a=p-a/k/v4 map[]", "b=p-b/k/v4 map[traceparent:t x:a\nb]"} {
		if got := recvWithin(t, handled, 10*time.Second, "a job of the batch"); got != want {
			t.Errorf("handled %s, want %s", got, want)
		}
	}
}

// TestEnqueueBatchBadInput: an empty batch is a no-op; a message without ID or with a Value
// is refused before anything is stored.
func TestEnqueueBatchBadInput(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	q, b := openQueue(t, pool, nil)
	if _, err := postgres.EnqueueBatch(ctx, b); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	ok := msgs(t, q, []string{"a"})
	for _, bad := range []driver.Message{{Body: []byte("x")}, {ID: "v", Value: "x"}} {
		_, err := postgres.EnqueueBatch(ctx, b, append(ok, bad)...)
		if err == nil || errors.Is(err, queue.ErrDuplicate) {
			t.Errorf("batch with %+v: err = %v, want an error for bad input", bad, err)
		}
	}
	if ids := idsOf(t, pool, b); len(ids) != 0 {
		t.Errorf("stored %q, want nothing", ids)
	}
}

// TestEnqueueBatchDuplicates: a repeated ID within the batch, a stored ID, or one within the
// dedup horizon refuses the whole batch, naming every duplicate; the refused batch leaves no
// record in the horizon.
func TestEnqueueBatchDuplicates(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	q, b := openQueue(t, pool, nil, queue.WithDedupHorizon(time.Hour))

	_, err := postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"a", "b", "a", "c", "b", "a"})...)
	wantDuplicates(t, err, "a", "b")
	if ids := idsOf(t, pool, b); len(ids) != 0 {
		t.Fatalf("stored %q after a refused batch, want nothing", ids)
	}

	if _, err := q.Enqueue(ctx, "x", queue.WithID("x")); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"y", "x", "z", "z"})...)
	wantDuplicates(t, err, "x", "z")
	if ids := idsOf(t, pool, b); !slices.Equal(ids, []string{"x"}) {
		t.Fatalf("stored %q, want [x]", ids)
	}

	// An ID gone from the table but within the horizon.
	if _, err := pool.Exec(ctx, `DELETE FROM corral.jobs WHERE queue = $1 AND id = 'x'`, postgres.Name(b)); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"n1", "x", "n2"})...)
	wantDuplicates(t, err, "x")
	// n1 and n2 were not recorded by the refused batch.
	if _, err := postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"n1", "n2"})...); err != nil {
		t.Fatalf("batch of the refused batch's other IDs: %v", err)
	}
	if ids := idsOf(t, pool, b); !slices.Equal(ids, []string{"n1", "n2"}) {
		t.Fatalf("stored %q, want [n1 n2]", ids)
	}
	// Enqueued again, the same batch is refused whole: it was stored.
	_, err = postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"n1", "n2"})...)
	wantDuplicates(t, err, "n1", "n2")
	// A single enqueue sees the batch's IDs as taken.
	if _, err := q.Enqueue(ctx, "again", queue.WithID("n2")); !errors.Is(err, queue.ErrDuplicate) {
		t.Errorf("Enqueue of a batch's ID: %v, want ErrDuplicate", err)
	}
}

// TestEnqueueBatchTx: a batch in the caller's transaction is invisible until the commit and
// gone on rollback; a refused batch leaves the transaction usable and nothing of itself in it.
func TestEnqueueBatchTx(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	q, b := openQueue(t, pool, nil, queue.WithDedupHorizon(time.Hour))

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.EnqueueBatchTx(ctx, tx, b, msgs(t, q, seq("r", 10))...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := stored(t, q); n != 0 {
		t.Fatalf("%d jobs after the rollback, want 0", n)
	}

	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES ('o1')`); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.EnqueueBatchTx(ctx, tx, b, msgs(t, q, seq("c", 10))...); err != nil {
		t.Fatal(err)
	}
	// Refused: c005 is taken in tx, and d001 repeats.
	_, err = postgres.EnqueueBatchTx(ctx, tx, b, msgs(t, q, []string{"d000", "d001", "c005", "d001"})...)
	wantDuplicates(t, err, "d001", "c005")
	if n := stored(t, q); n != 0 {
		t.Fatalf("%d jobs visible before the commit, want 0", n)
	}
	// tx is usable: the refused batch left nothing, not even the horizon's records.
	if _, err := postgres.EnqueueBatchTx(ctx, tx, b, msgs(t, q, []string{"d000", "d001"})...); err != nil {
		t.Fatalf("batch after a refused one in the same tx: %v", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES ('o2')`); err != nil {
		t.Fatalf("tx after a refused batch: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := append(seq("c", 10), "d000", "d001")
	if ids := idsOf(t, pool, b); !slices.Equal(ids, want) {
		t.Fatalf("stored %q, want %q", ids, want)
	}
	var orders int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM orders`).Scan(&orders); err != nil || orders != 2 {
		t.Fatalf("%d orders (%v), want 2", orders, err)
	}
}

// TestEnqueueBatchOrder: the jobs of a key are numbered and delivered in the batch's order,
// after the key's jobs stored before, with several workers.
func TestEnqueueBatchOrder(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	q, b := openQueue(t, pool, nil)
	if _, err := q.Enqueue(ctx, "first", queue.WithID("k1-first"), queue.WithKey("k1")); err != nil {
		t.Fatal(err)
	}
	var batch []driver.Message
	want := map[string][]string{"k1": {"k1-first"}}
	// IDs in descending order, so that neither ID order nor chance gives the batch's order.
	for i := 59; i >= 0; i-- {
		key := fmt.Sprintf("k%d", i%3)
		id := fmt.Sprintf("%s-%02d", key, i)
		batch = append(batch, msgs(t, q, []string{id}, queue.WithKey(key))...)
		want[key] = append(want[key], id)
	}
	if _, err := postgres.EnqueueBatch(ctx, b, batch...); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string][]string{}
	done := make(chan struct{}, 61)
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		mu.Lock()
		got[j.Key] = append(got[j.Key], j.ID)
		mu.Unlock()
		done <- struct{}{}
		return nil
	}, queue.WithWorkers(4))
	if err != nil {
		t.Fatal(err)
	}
	for range 61 {
		recvWithin(t, done, 20*time.Second, "a job")
	}
	if _, err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for key, ids := range want {
		if !slices.Equal(got[key], ids) {
			t.Errorf("key %s handled in order %q, want %q", key, got[key], ids)
		}
	}
}

// TestEnqueueBatchCapacity: the overflow policy applies to the batch as a whole.
func TestEnqueueBatchCapacity(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	open := func(t *testing.T, p queue.Overflow) (*queue.Queue[string], *postgres.Backend) {
		q, b := openQueue(t, pool, nil, queue.WithCapacity(4), queue.WithOverflow(p), queue.WithVersion(1))
		if _, err := postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"s1", "s2", "s3"})...); err != nil {
			t.Fatal(err)
		}
		return q, b
	}
	for _, p := range []queue.Overflow{queue.Reject, queue.DropNewest, queue.DropOldest, queue.Block} {
		t.Run("TooLarge"+p.String(), func(t *testing.T) {
			q, b := openQueue(t, pool, nil, queue.WithCapacity(4), queue.WithOverflow(p))
			_, err := postgres.EnqueueBatch(ctx, b, msgs(t, q, seq("x", 5))...)
			if !errors.Is(err, queue.ErrFull) {
				t.Errorf("batch of 5 into capacity 4: %v, want ErrFull", err)
			}
			if ids := idsOf(t, pool, b); len(ids) != 0 {
				t.Errorf("stored %q", ids)
			}
		})
	}
	t.Run("Reject", func(t *testing.T) {
		q, b := open(t, queue.Reject)
		if _, err := postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"n1", "n2", "n3"})...); !errors.Is(err, queue.ErrFull) {
			t.Fatalf("err = %v, want ErrFull", err)
		}
		if _, err := postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"n1"})...); err != nil {
			t.Fatalf("a batch that fits: %v", err)
		}
		if ids := idsOf(t, pool, b); !slices.Equal(ids, []string{"s1", "s2", "s3", "n1"}) {
			t.Fatalf("stored %q", ids)
		}
		if _, err := q.Enqueue(ctx, "one more"); !errors.Is(err, queue.ErrFull) {
			t.Fatalf("Enqueue into the full queue: %v, want ErrFull: the batch was counted", err)
		}
	})
	t.Run("DropNewest", func(t *testing.T) {
		q, b := open(t, queue.DropNewest)
		if _, err := postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"n1", "n2"})...); !errors.Is(err, queue.ErrDropped) {
			t.Fatalf("err = %v, want ErrDropped", err)
		}
		if ids := idsOf(t, pool, b); !slices.Equal(ids, []string{"s1", "s2", "s3"}) {
			t.Fatalf("stored %q", ids)
		}
	})
	t.Run("DropOldest", func(t *testing.T) {
		q, b := open(t, queue.DropOldest)
		res, err := postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"n1", "n2", "n3"})...)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Evicted, []string{"s1", "s2"}) {
			t.Fatalf("Evicted = %q, want [s1 s2]", res.Evicted)
		}
		if ids := idsOf(t, pool, b); !slices.Equal(ids, []string{"s3", "n1", "n2", "n3"}) {
			t.Fatalf("stored %q", ids)
		}
		var dead []string
		for d, err := range q.DeadLetters(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if d.Reason != queue.ReasonEvicted || d.Job.Version != 1 {
				t.Errorf("dead letter %s: reason %v, version %d; want evicted, 1", d.Job.ID, d.Reason, d.Job.Version)
			}
			dead = append(dead, d.Job.ID)
		}
		if !slices.Equal(dead, []string{"s1", "s2"}) {
			t.Fatalf("dead letters %q, want [s1 s2]", dead)
		}
		if _, err := q.Enqueue(ctx, "one more", queue.WithID("n4")); err != nil {
			t.Fatal(err)
		}
		if ids := idsOf(t, pool, b); !slices.Equal(ids, []string{"n1", "n2", "n3", "n4"}) {
			t.Fatalf("stored %q after one more: the count is off", ids)
		}
	})
	t.Run("DropOldestLeased", func(t *testing.T) {
		q, b := open(t, queue.DropOldest)
		// s1 and s2 leased: only s3 may be moved, and the batch needs two.
		if _, err := pool.Exec(ctx, `UPDATE corral.jobs SET lease_until = now() + interval '1 hour' WHERE queue = $1 AND id <> 's3'`, postgres.Name(b)); err != nil {
			t.Fatal(err)
		}
		if _, err := postgres.EnqueueBatch(ctx, b, msgs(t, q, []string{"n1", "n2", "n3"})...); !errors.Is(err, queue.ErrFull) {
			t.Fatalf("err = %v, want ErrFull", err)
		}
		if ids := idsOf(t, pool, b); !slices.Equal(ids, []string{"s1", "s2", "s3"}) {
			t.Fatalf("stored %q, want s3 not evicted", ids)
		}
	})
	t.Run("Block", func(t *testing.T) {
		q, b := open(t, queue.Block)
		errc := make(chan error, 1)
		batch := msgs(t, q, []string{"n1", "n2"}) // in the test's goroutine: msgs may call t.Fatal
		go func() {
			_, err := postgres.EnqueueBatch(ctx, b, batch...)
			errc <- err
		}()
		quiet(t, errc, 300*time.Millisecond, "batch return at capacity")
		if _, err := pool.Exec(ctx, `DELETE FROM corral.jobs WHERE queue = $1 AND id = 's1'`, postgres.Name(b)); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `UPDATE corral.queues SET stored = stored - 1 WHERE name = $1`, postgres.Name(b)); err != nil {
			t.Fatal(err)
		}
		if err := recvWithin(t, errc, 10*time.Second, "batch after room was made"); err != nil {
			t.Fatal(err)
		}
		if ids := idsOf(t, pool, b); !slices.Equal(ids, []string{"s2", "s3", "n1", "n2"}) {
			t.Fatalf("stored %q", ids)
		}
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if _, err := postgres.EnqueueBatch(cctx, b, msgs(t, q, []string{"n3"})...); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("blocked batch at the deadline: %v", err)
		}
	})
}

// TestEnqueueBatchConcurrent: batches racing for the same IDs and keys: exactly one of them
// stores the IDs, the others are refused naming all of them; batches that lock keys in
// opposite orders do not deadlock.
func TestEnqueueBatchConcurrent(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	q, b := openQueue(t, pool, nil, queue.WithDedupHorizon(time.Hour), queue.WithCapacity(1000))
	const racers = 6
	ids := seq("shared", 20)
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		batch := msgs(t, q, ids, queue.WithKey(fmt.Sprint("k", i%2)))
		if i%2 == 1 {
			slices.Reverse(batch)
		}
		// Each racer also stores jobs of its own, under the keys in its own order.
		for j := range 5 {
			batch = append(batch, msgs(t, q, []string{fmt.Sprintf("own%d-%d", i, j)}, queue.WithKey(fmt.Sprint("k", (i+j)%3)))...)
		}
		wg.Go(func() { _, errs[i] = postgres.EnqueueBatch(ctx, b, batch...) })
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		if err == nil {
			ok++
			continue
		}
		var de *postgres.DuplicateError
		if !errors.As(err, &de) || len(de.IDs) != len(ids) {
			t.Errorf("racer %d: %v, want success or a DuplicateError naming the %d shared IDs", i, err, len(ids))
		}
	}
	if ok != 1 {
		t.Fatalf("%d racers stored their batch, want exactly 1", ok)
	}
	if n := len(idsOf(t, pool, b)); n != len(ids)+5 {
		t.Fatalf("%d jobs stored, want %d", n, len(ids)+5)
	}
	var count int
	if err := pool.QueryRow(ctx, `SELECT stored FROM corral.queues WHERE name = $1`, postgres.Name(b)).Scan(&count); err != nil || count != len(ids)+5 {
		t.Fatalf("stored count %d (%v), want %d", count, err, len(ids)+5)
	}
}
