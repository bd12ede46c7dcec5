package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/corral-go/corral/queue/driver"
)

// EnqueueBatch stores the jobs msgs in b's queue, all of them or none, with one INSERT for the
// whole batch in a transaction of its own. Make each message with the Message method of the
// queue.Queue that b serves (it applies the queue's codec, ID, key, delay and start-by options);
// every field of a driver.Message that a stored job has is kept: ID, Key, Version, Headers, Body, EnqueuedAt
// (the time of the call if zero), NotBefore and StartBy. A message without an ID, or with a Value
// (one made for an in-process backend), fails the call before anything is sent. An empty batch
// stores nothing and returns no error.
//
// Dedup applies to every job as to one enqueued alone: if an ID repeats within msgs, is
// stored, or (with a dedup horizon) was enqueued within the horizon, nothing is stored and the
// error is a *DuplicateError listing every such ID, which matches queue.ErrDuplicate; the
// refused batch leaves no trace in the horizon's records. The jobs of one ordering key are
// delivered in their order in msgs (and after the key's jobs stored before). With a capacity,
// the batch counts as len(msgs) jobs and the overflow policy applies to it as a whole: Reject
// returns queue.ErrFull and DropNewest queue.ErrDropped (nothing stored), Block waits until
// there is room for every job or ctx ends (polling as Enqueue does), and DropOldest moves as
// many of the oldest jobs not leased to the dead letters as the batch needs, listed in the
// result's Evicted, or returns queue.ErrFull (nothing stored, nothing moved) if not enough jobs
// are free to move. A batch of more jobs than the capacity fails with queue.ErrFull under
// every policy: it can never fit.
//
// An error matching queue.ErrUnavailable means the batch may have been stored: call again with
// the same messages; a *DuplicateError listing every ID then means it was. Like EnqueueTx,
// EnqueueBatch does not count the jobs in the queue's Stats.Enqueued nor call its OnEnqueue
// hook. It is safe for concurrent use.
func EnqueueBatch(ctx context.Context, b *Backend, msgs ...driver.Message) (driver.EnqueueResult, error) {
	if err := b.life.Check(calls); err != nil {
		return driver.EnqueueResult{}, err
	}
	return b.enqueueBatch(ctx, b.pool, "EnqueueBatch", msgs)
}

// EnqueueBatchTx is EnqueueBatch inside the caller's transaction tx: the jobs are stored by tx,
// invisible to every consumer until tx commits and gone if it rolls back, and the receivers are
// notified at the commit. The batch runs in a savepoint of tx: a batch refused for any reason
// (a duplicate, the overflow policy, a failed query) is rolled back to it, so that nothing of
// it stays in tx and tx is usable, as after a refused EnqueueTx. (If the server or ctx failed,
// tx itself may be broken; roll it back.)
//
// As EnqueueTx, with a capacity it holds the queue's count of stored jobs locked from the
// enqueue to the end of tx, and the jobs with ordering keys hold their keys' enqueue locks
// to the end of tx: keep such transactions short. Block waits for room outside the
// savepoint, but inside tx.
func EnqueueBatchTx(ctx context.Context, tx pgx.Tx, b *Backend, msgs ...driver.Message) (driver.EnqueueResult, error) {
	if tx == nil {
		panic("postgres: EnqueueBatchTx with a nil transaction")
	}
	if err := b.life.Check(calls); err != nil {
		return driver.EnqueueResult{}, err
	}
	return b.enqueueBatch(ctx, tx, "EnqueueBatchTx", msgs)
}

// DuplicateError is the error of a batch (EnqueueBatch, EnqueueBatchTx) refused because some
// of its jobs' IDs are taken. It matches queue.ErrDuplicate.
type DuplicateError struct {
	// IDs lists the taken IDs, each once, in the order of their first job in the batch: an ID
	// that repeats within the batch, is stored, or was enqueued within the dedup horizon.
	IDs []string
}

// Error says how many IDs were taken, and the first few.
func (e *DuplicateError) Error() string {
	const shown = 5
	ids := e.IDs
	more := ""
	if len(ids) > shown {
		ids, more = ids[:shown], ", ..."
	}
	return "postgres: batch refused: " + strconv.Itoa(len(e.IDs)) + " job IDs taken (" + strings.Join(ids, ", ") + more + "): " + driver.ErrDuplicate.Error()
}

// Is reports whether target is queue.ErrDuplicate.
func (e *DuplicateError) Is(target error) bool { return target == driver.ErrDuplicate }

// Unwrap returns queue.ErrDuplicate.
func (e *DuplicateError) Unwrap() error { return driver.ErrDuplicate }

// batch is a batch of jobs as the batch INSERT takes it: a column per field, the first job of
// each ID only. repeated lists the IDs that repeat in the batch, ids the IDs of every job in
// the batch's order (for a DuplicateError in that order).
type batch struct {
	id, key           []string
	body              [][]byte
	enqueued          []time.Time
	notBefore, startB []pgtype.Timestamptz
	version           []int64
	headers           []*string // JSON text, or nil for none
	repeated          map[string]bool
	all               []string
}

// newBatch checks msgs and puts them in columns, as enqueueBatch's op.
func newBatch(op string, msgs []driver.Message) (*batch, error) {
	n := len(msgs)
	c := &batch{
		id: make([]string, 0, n), key: make([]string, 0, n), body: make([][]byte, 0, n),
		enqueued: make([]time.Time, 0, n), notBefore: make([]pgtype.Timestamptz, 0, n),
		startB: make([]pgtype.Timestamptz, 0, n), version: make([]int64, 0, n), headers: make([]*string, 0, n), all: make([]string, 0, n),
	}
	seen := make(map[string]struct{}, n)
	now := time.Now()
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.ID == "":
			return nil, fmt.Errorf("postgres: %s: job %d of the batch has no ID (make the messages with the queue's Message)", op, i)
		case m.Value != nil:
			return nil, fmt.Errorf("postgres: %s: job %s has a Value: make the messages with the Message of a queue on this backend", op, m.ID)
		case m.Unique != "":
			return nil, fmt.Errorf("postgres: %s: job %s has a unique key: a batch takes none (enqueue the job alone)", op, m.ID)
		}
		if err := checkStorable(op, m); err != nil {
			return nil, err
		}
		c.all = append(c.all, m.ID)
		if _, dup := seen[m.ID]; dup {
			if c.repeated == nil {
				c.repeated = make(map[string]bool)
			}
			c.repeated[m.ID] = true
			continue
		}
		seen[m.ID] = struct{}{}
		body := m.Body
		if body == nil {
			body = []byte{} // the column is NOT NULL
		}
		at := m.EnqueuedAt
		if at.IsZero() {
			at = now
		}
		c.id = append(c.id, m.ID)
		c.key = append(c.key, m.Key)
		c.body = append(c.body, body)
		c.enqueued = append(c.enqueued, at)
		c.notBefore = append(c.notBefore, pgtype.Timestamptz{Time: m.NotBefore, Valid: !m.NotBefore.IsZero()})
		c.startB = append(c.startB, pgtype.Timestamptz{Time: m.StartBy, Valid: !m.StartBy.IsZero()})
		c.version = append(c.version, int64(m.Version))
		c.headers = append(c.headers, headersArg(m.Headers))
	}
	return c, nil
}

// duplicates returns the error of the batch whose jobs with the IDs taken (in the queue) were
// not stored, or nil if none was and no ID repeats.
func (c *batch) duplicates(taken []string) error {
	if len(taken) == 0 && len(c.repeated) == 0 {
		return nil
	}
	bad := make(map[string]bool, len(taken)+len(c.repeated))
	for _, id := range taken {
		bad[id] = true
	}
	for id := range c.repeated {
		bad[id] = true
	}
	e := &DuplicateError{IDs: make([]string, 0, len(bad))}
	for _, id := range c.all {
		if bad[id] {
			e.IDs = append(e.IDs, id)
			delete(bad, id)
		}
	}
	return e
}

// beginner is what a batch runs on: the pool, whose Begin starts a transaction, or the
// caller's pgx.Tx (EnqueueBatchTx), whose Begin starts a savepoint.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// enqueueBatch stores msgs through q, as EnqueueBatch says; op names the caller in errors.
func (b *Backend) enqueueBatch(ctx context.Context, q beginner, op string, msgs []driver.Message) (driver.EnqueueResult, error) {
	if len(msgs) == 0 {
		return driver.EnqueueResult{}, nil
	}
	c, err := newBatch(op, msgs)
	if err != nil {
		return driver.EnqueueResult{}, err
	}
	if b.cfg.Capacity > 0 && len(msgs) > b.cfg.Capacity {
		return driver.EnqueueResult{}, fmt.Errorf("postgres: %s: a batch of %d jobs is larger than the capacity, %d: %w",
			op, len(msgs), b.cfg.Capacity, driver.ErrFull)
	}
	return b.untilStored(ctx, func() (driver.EnqueueResult, bool, error) { return b.enqueueBatchOnce(ctx, q, c) })
}

// enqueueBatchOnce is one try of enqueueBatch, in a transaction (or a savepoint) of its own. It
// reports full (and no error) when Block must wait for room.
func (b *Backend) enqueueBatchOnce(ctx context.Context, q beginner, c *batch) (res driver.EnqueueResult, full bool, err error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	tx, err := q.Begin(cctx)
	if err != nil {
		return res, false, calls.Fail(cctx, "enqueue a batch", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(cctx)) }() // a no-op once committed
	sql := b.sql.insertBatch
	args := []any{b.name, c.id, c.key, c.body, c.enqueued, c.notBefore, c.startB, b.channel, c.version, c.headers}
	if b.cfg.DedupHorizon > 0 {
		sql = b.sql.insertBatchDedup
		args = append(args, micros(b.cfg.DedupHorizon))
	}
	var taken []string
	if err := tx.QueryRow(cctx, sql, args...).Scan(&taken, nil); err != nil {
		return res, false, calls.Fail(cctx, "enqueue a batch", err)
	}
	if err := c.duplicates(taken); err != nil {
		return res, false, err
	}
	if b.cfg.Capacity > 0 {
		if full, err := b.reserveBatch(cctx, tx, c, &res); full || err != nil {
			return driver.EnqueueResult{}, full, err
		}
	}
	if err := tx.Commit(cctx); err != nil {
		return driver.EnqueueResult{}, false, calls.Fail(cctx, "enqueue a batch", err)
	}
	return res, false, nil
}

// reserveBatch takes, in tx, room for the stored batch c in a queue with a capacity, applying
// the overflow policy if there is not enough: it reports full (and no error) when Block must
// wait; with DropOldest it moves the jobs that make room to the dead letters, recorded in res.
func (b *Backend) reserveBatch(ctx context.Context, tx pgx.Tx, c *batch, res *driver.EnqueueResult) (full bool, err error) {
	var over int64
	if err := tx.QueryRow(ctx, b.sql.reserveBatch, b.name, len(c.id)).Scan(&over); err != nil {
		return false, calls.Fail(ctx, "enqueue a batch", err)
	}
	if over <= 0 {
		return false, nil
	}
	if err := b.cfg.Overflow.Refusal(); err != nil {
		return false, err
	}
	if b.cfg.Overflow == driver.Block {
		return true, nil
	}
	rows, err := tx.Query(ctx, b.sql.evictBatch, b.name, c.id, driver.ErrEvicted.Error(), over)
	if err != nil {
		return false, calls.Fail(ctx, "evict the oldest jobs", err)
	}
	fresh := 0
	var evicted []string
	var id string
	var isNew bool
	_, err = pgx.ForEachRow(rows, []any{&id, &isNew}, func() error {
		evicted = append(evicted, id)
		if isNew {
			fresh++
		}
		return nil
	})
	if err != nil {
		return false, calls.Fail(ctx, "evict the oldest jobs", err)
	}
	if int64(len(evicted)) < over {
		return false, driver.ErrFull // too many leased: the savepoint's rollback puts them back
	}
	res.Evicted = evicted
	res.DeadEvicted, err = b.countDeadN(ctx, tx, fresh, len(evicted), nil)
	return false, err
}
