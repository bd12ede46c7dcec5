package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
)

// Enqueue implements queue.Backend. A job whose ID is stored, or (with a dedup horizon) was
// enqueued within the horizon, is refused with queue.ErrDuplicate. With a capacity, the queue's
// count of stored jobs is taken in the same transaction as the job is stored, and the overflow
// policy applied as queue.Backend says: Block polls for room, every 5ms to 100ms, until ctx
// ends; DropOldest moves the oldest job not leased to the dead letters.
func (b *Backend) Enqueue(ctx context.Context, m queue.Message) (queue.EnqueueResult, error) {
	if err := b.checkOpen(); err != nil {
		return queue.EnqueueResult{}, err
	}
	return b.enqueue(ctx, b.pool, m)
}

// beginner is what an enqueue runs on: the pool, whose Begin starts a transaction, or the
// caller's transaction (EnqueueTx), whose Begin starts a savepoint.
type beginner interface {
	querier
	Begin(ctx context.Context) (pgx.Tx, error)
}

// enqueue stores m through q, as Enqueue says.
func (b *Backend) enqueue(ctx context.Context, q beginner, m queue.Message) (queue.EnqueueResult, error) {
	if m.EnqueuedAt.IsZero() {
		m.EnqueuedAt = time.Now()
	}
	if b.cfg.Capacity == 0 {
		cctx, cancel := b.call(ctx)
		defer cancel()
		_, err := b.insert(cctx, q, m, true)
		if err != nil && !errors.Is(err, queue.ErrDuplicate) {
			err = fail(cctx, "enqueue", err)
		}
		return queue.EnqueueResult{}, err
	}
	return b.untilRoom(ctx, func() (queue.EnqueueResult, bool, error) { return b.enqueueCounted(ctx, q, m) })
}

// untilRoom runs try, an enqueue into a queue with a capacity, until it stores or fails: while
// it reports full (Block), untilRoom polls for room, spaced by roomPolls, until ctx ends or the
// backend closes.
func (b *Backend) untilRoom(ctx context.Context, try func() (res queue.EnqueueResult, full bool, err error)) (queue.EnqueueResult, error) {
	pauses := roomPolls.Sequence()
	for {
		res, full, err := try()
		if !full || err != nil {
			return res, err
		}
		t := time.NewTimer(pauses.Next())
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, context.Cause(ctx)
		case <-b.closing:
			t.Stop()
			return res, queue.ErrClosed
		}
	}
}

// roomPolls spaces the polls of an Enqueue blocked at capacity.
var roomPolls = backoff.Exponential(5*time.Millisecond, 2, 100*time.Millisecond)

// insert stores m with one statement and returns its seq, or returns queue.ErrDuplicate; with
// dedup, the queue's dedup horizon applies.
func (b *Backend) insert(ctx context.Context, q querier, m queue.Message, dedup bool) (int64, error) {
	sql := b.sql.insert
	body := m.Body
	if body == nil {
		body = []byte{} // the column is NOT NULL
	}
	args := []any{b.name, m.ID, nullString(m.Key), body, m.EnqueuedAt, nullTime(m.NotBefore), nullTime(m.StartBy), b.channel}
	dedup = dedup && b.cfg.DedupHorizon > 0
	switch {
	case dedup && m.Key != "":
		sql = b.sql.insertKeyedDedup
	case dedup:
		sql = b.sql.insertDedup
	case m.Key != "":
		sql = b.sql.insertKeyed
	}
	if dedup {
		args = append(args, micros(b.cfg.DedupHorizon))
	}
	var seq int64
	err := q.QueryRow(ctx, sql, args...).Scan(&seq, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, queue.ErrDuplicate
	}
	return seq, err
}

// enqueueCounted is one try of an enqueue into a queue with a capacity, in a transaction (or a
// savepoint) of its own: the job is stored, then room is taken for it; at capacity the
// overflow policy decides. It reports full (and no error) when Block must wait for room.
func (b *Backend) enqueueCounted(ctx context.Context, q beginner, m queue.Message) (res queue.EnqueueResult, full bool, err error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	tx, err := q.Begin(cctx)
	if err != nil {
		return res, false, fail(cctx, "enqueue", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(cctx)) }() // a no-op once committed
	seq, err := b.insert(cctx, tx, m, true)
	if errors.Is(err, queue.ErrDuplicate) {
		return res, false, err
	}
	if err != nil {
		return res, false, fail(cctx, "enqueue", err)
	}
	var stored int64
	err = tx.QueryRow(cctx, b.sql.reserve, b.name, 1).Scan(&stored)
	switch {
	case errors.Is(err, pgx.ErrNoRows): // full
		switch b.cfg.Overflow {
		case queue.Reject:
			return res, false, queue.ErrFull
		case queue.DropNewest:
			return res, false, queue.ErrDropped
		case queue.Block:
			return res, true, nil
		}
		if err := b.evictOldest(cctx, tx, seq, &res); err != nil {
			return queue.EnqueueResult{}, false, err
		}
	case err != nil:
		return res, false, fail(cctx, "enqueue", err)
	}
	if err := tx.Commit(cctx); err != nil {
		return queue.EnqueueResult{}, false, fail(cctx, "enqueue", err)
	}
	return res, false, nil
}

// errEvicted is the error of the attempt an eviction records, as the in-memory backend's.
var errEvicted = errors.New("queue: evicted by overflow (drop oldest)")

// evictOldest moves, in tx, the oldest job not leased (but the job seq being enqueued) to the
// dead letters with queue.ReasonEvicted, in place of the job being enqueued, and records it in
// res; it returns queue.ErrFull if every other stored job is leased.
func (b *Backend) evictOldest(ctx context.Context, tx pgx.Tx, seq int64, res *queue.EnqueueResult) error {
	var (
		id    string
		fresh bool
	)
	err := tx.QueryRow(ctx, b.sql.evict, b.name, seq, errEvicted.Error()).Scan(&id, &fresh)
	if errors.Is(err, pgx.ErrNoRows) {
		return queue.ErrFull
	}
	if err != nil {
		return fail(ctx, "evict the oldest job", err)
	}
	res.Evicted = append(res.Evicted, id)
	// The evicted job's room is the new job's: stored stays.
	res.DeadEvicted, err = b.countDead(ctx, tx, fresh, 0, res.DeadEvicted)
	return err
}

// countDead counts, in tx, a job that left the queue for the dead letters (a new dead letter
// if fresh, else one that replaced the dead letter of its ID), as countDeadN does.
func (b *Backend) countDead(ctx context.Context, tx pgx.Tx, fresh bool, leaving int, evicted []string) ([]string, error) {
	added := 0
	if fresh {
		added = 1
	}
	return b.countDeadN(ctx, tx, added, leaving, evicted)
}

// countDeadN counts, in tx, added new dead letters, and leaving jobs that left a queue with a
// capacity, and deletes the dead letters beyond the limit, oldest first; their IDs are
// appended to evicted.
func (b *Backend) countDeadN(ctx context.Context, tx pgx.Tx, added, leaving int, evicted []string) ([]string, error) {
	var over int64
	if err := tx.QueryRow(ctx, b.sql.buryCount, b.name, added, leaving).Scan(&over); err != nil {
		return evicted, fail(ctx, "count the dead letters", err)
	}
	if over == 0 {
		return evicted, nil
	}
	rows, err := tx.Query(ctx, b.sql.evictDead, b.name, over)
	if err != nil {
		return evicted, fail(ctx, "evict dead letters", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return evicted, fail(ctx, "evict dead letters", err)
	}
	return append(evicted, ids...), nil
}
