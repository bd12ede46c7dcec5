package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/driver"
)

// Enqueue implements driver.Backend. A job whose ID is stored, or (with a dedup horizon) was
// enqueued within the horizon, is refused with queue.ErrDuplicate. With a capacity, the queue's
// count of stored jobs is taken in the same transaction as the job is stored, and the overflow
// policy applied as driver.Backend says: Block polls for room, every 5ms to 100ms, until ctx
// ends; DropOldest moves the oldest job not leased to the dead letters.
//
// A job with an ordering key waits while another transaction holds the key (a keyed EnqueueTx
// or EnqueueBatchTx not yet committed): it tries again, every 5ms to 100ms, until that
// transaction ends, and stores the job after the ones it enqueued if it commits. Such a wait is
// not an outage: the call timeout bounds each try, not the wait, which lasts until ctx ends and
// then returns context.Cause(ctx), having stored nothing; the queue's Health stays reachable.
// (If ctx ends while a try is in flight, the error also matches queue.ErrUnavailable, as for
// any call cut short: that try's outcome is unknown.)
func (b *Backend) Enqueue(ctx context.Context, m driver.Message) (driver.EnqueueResult, error) {
	if err := b.life.Check(calls); err != nil {
		return driver.EnqueueResult{}, err
	}
	return b.enqueue(ctx, nil, m)
}

// enqueue stores m, as Enqueue says: with the pool if tx is nil, else in the caller's
// transaction tx (EnqueueTx).
func (b *Backend) enqueue(ctx context.Context, tx Tx, m driver.Message) (driver.EnqueueResult, error) {
	if err := checkStorable("enqueue", &m); err != nil {
		return driver.EnqueueResult{}, err
	}
	if m.EnqueuedAt.IsZero() {
		m.EnqueuedAt = time.Now()
	}
	if m.Unique != "" {
		return b.untilStored(ctx, func() (driver.EnqueueResult, bool, error) { return b.enqueueUnique(ctx, tx, m) })
	}
	if b.cfg.Capacity == 0 {
		return b.untilStored(ctx, func() (driver.EnqueueResult, bool, error) { return b.enqueueOnce(ctx, tx, m) })
	}
	return b.untilStored(ctx, func() (driver.EnqueueResult, bool, error) { return b.enqueueCounted(ctx, tx, m) })
}

// checkStorable returns the error of op for a job whose ID or key Postgres cannot store as
// text, and nil for one it can.
func checkStorable(op string, m *driver.Message) error {
	switch {
	case !storable(m.ID):
		return fmt.Errorf("postgres: %s: ID %q is not UTF-8 without NUL bytes: Postgres cannot store it", op, m.ID)
	case !storable(m.Key):
		return fmt.Errorf("postgres: %s: job %q: key %q is not UTF-8 without NUL bytes: Postgres cannot store it", op, m.ID, m.Key)
	case !storable(m.Unique):
		return fmt.Errorf("postgres: %s: job %q: unique key %q is not UTF-8 without NUL bytes: Postgres cannot store it", op, m.ID, m.Unique)
	}
	return nil
}

// enqueueOnce is one try of an enqueue into a queue without a capacity: one statement. It
// reports again (and no error) when another transaction holds the job's key.
func (b *Backend) enqueueOnce(ctx context.Context, tx Tx, m driver.Message) (res driver.EnqueueResult, again bool, err error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	var q Tx = b.pool
	if tx != nil {
		q = tx
	}
	_, err = b.insert(cctx, q, m, true)
	switch {
	case errors.Is(err, errKeyBusy):
		return res, true, nil
	case err != nil && !errors.Is(err, driver.ErrDuplicate):
		err = calls.Fail(cctx, "enqueue", err)
	}
	return res, false, err
}

// errKeyBusy is insert's error when another transaction holds the key of the job: a keyed
// enqueue in a transaction not yet committed (EnqueueTx, EnqueueBatchTx). The enqueue tries
// again (see untilStored) instead of waiting in a query, so that a wait on the user's
// transaction is never taken for a server that does not answer.
var errKeyBusy = errors.New("postgres: the job's key is held by another transaction")

// span is what one try of an enqueue into a queue with a capacity runs in, so that a refused
// try leaves nothing behind: a transaction of the backend's own, or a savepoint in the
// caller's transaction. It is made with SQL any driver carries, so that a Tx of database/sql
// works as one of pgx.
type span struct {
	Tx
	own  pgx.Tx // the backend's own transaction, or nil: a savepoint in Tx
	done bool   // committed or rolled back
}

// savepoint names the savepoint of a span in the caller's transaction.
const savepoint = "corral_enqueue"

// beginTry begins the span of one try of an enqueue (see begin) in a call of its own: cctx bounds
// the try by the call timeout, and end rolls the span back (a no-op once it is committed) and
// ends the call. An error is the enqueue's, as calls.Fail reports it.
func (b *Backend) beginTry(ctx context.Context, tx Tx) (cctx context.Context, s *span, end func(), err error) {
	cctx, cancel := b.call(ctx)
	s, err = b.begin(cctx, tx)
	if err != nil {
		err = calls.Fail(cctx, "enqueue", err) // before cancel: Fail reads cctx
		cancel()
		return nil, nil, nil, err
	}
	return cctx, s, func() { s.rollback(context.WithoutCancel(cctx)); cancel() }, nil
}

// begin starts a span: a transaction of the backend's own if tx is nil, else a savepoint in tx.
func (b *Backend) begin(ctx context.Context, tx Tx) (*span, error) {
	if tx == nil {
		own, err := b.pool.Begin(ctx)
		if err != nil {
			return nil, err
		}
		return &span{Tx: own, own: own}, nil
	}
	if _, err := tx.Exec(ctx, "SAVEPOINT "+savepoint); err != nil {
		return nil, err
	}
	return &span{Tx: tx}, nil
}

// commit commits s: its transaction, or the savepoint into the caller's transaction.
func (s *span) commit(ctx context.Context) error {
	s.done = true
	if s.own != nil {
		return s.own.Commit(ctx)
	}
	_, err := s.Exec(ctx, "RELEASE SAVEPOINT "+savepoint)
	return err
}

// rollback undoes what s did, unless it was committed: a no-op then. In the caller's
// transaction, it rolls back to the savepoint and releases it, which leaves the transaction
// usable even after a failed statement.
func (s *span) rollback(ctx context.Context) {
	if s.done {
		return
	}
	s.done = true
	if s.own != nil {
		_ = s.own.Rollback(ctx)
		return
	}
	if _, err := s.Exec(ctx, "ROLLBACK TO SAVEPOINT "+savepoint); err == nil {
		_, _ = s.Exec(ctx, "RELEASE SAVEPOINT "+savepoint)
	}
}

// untilStored runs try, one try of an enqueue, until it stores or fails: while it reports
// again (its queue is full under Block, or another transaction holds its key), untilStored
// tries again, spaced by roomPolls, until ctx ends or the backend closes.
func (b *Backend) untilStored(ctx context.Context, try func() (res driver.EnqueueResult, again bool, err error)) (driver.EnqueueResult, error) {
	pauses := roomPolls.Sequence()
	for {
		res, again, err := try()
		if !again || err != nil {
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
			return res, driver.ErrClosed
		}
	}
}

// roomPolls spaces the tries of an Enqueue blocked at capacity or on its key.
var roomPolls = backoff.Exponential(5*time.Millisecond, 2, 100*time.Millisecond)

// insert stores m with one statement and returns its seq, or returns queue.ErrDuplicate, or
// errKeyBusy if another transaction holds m's key (nothing stored); with dedup, the queue's
// dedup horizon applies.
func (b *Backend) insert(ctx context.Context, q Tx, m driver.Message, dedup bool) (int64, error) {
	stmt := b.sql.insert
	body := m.Body
	if body == nil {
		body = []byte{} // the column is NOT NULL
	}
	args := []any{b.name, m.ID, nullString(m.Key), body, m.EnqueuedAt, nullTime(m.NotBefore), nullTime(m.StartBy), b.channel,
		int64(m.Version), headersArg(m.Headers)}
	dedup = dedup && b.cfg.DedupHorizon > 0
	switch {
	case dedup && m.Key != "":
		stmt = b.sql.insertKeyedDedup
	case dedup:
		stmt = b.sql.insertDedup
	case m.Key != "":
		stmt = b.sql.insertKeyed
	}
	if dedup {
		args = append(args, micros(b.cfg.DedupHorizon))
	}
	var (
		locked   bool
		seq      *int64
		notified *string
	)
	err := q.QueryRow(ctx, stmt, args...).Scan(&locked, &seq, &notified)
	switch {
	case errors.Is(err, sql.ErrNoRows): // pgx.ErrNoRows matches it too
		return 0, driver.ErrDuplicate
	case err != nil:
		return 0, err
	case !locked:
		return 0, errKeyBusy
	case seq == nil:
		return 0, driver.ErrDuplicate
	}
	return *seq, nil
}

// enqueueCounted is one try of an enqueue into a queue with a capacity, in a transaction (or a
// savepoint) of its own: the job is stored, then room is taken for it; at capacity the
// overflow policy decides. It reports again (and no error) when Block must wait for room, or
// another transaction holds the job's key.
func (b *Backend) enqueueCounted(ctx context.Context, caller Tx, m driver.Message) (res driver.EnqueueResult, again bool, err error) {
	cctx, tx, end, err := b.beginTry(ctx, caller)
	if err != nil {
		return res, false, err
	}
	defer end()
	seq, err := b.insert(cctx, tx, m, true)
	if errors.Is(err, errKeyBusy) {
		return res, true, nil
	}
	if errors.Is(err, driver.ErrDuplicate) {
		return res, false, err
	}
	if err != nil {
		return res, false, calls.Fail(cctx, "enqueue", err)
	}
	var stored int64
	err = tx.QueryRow(cctx, b.sql.reserve, b.name, 1).Scan(&stored)
	switch {
	case errors.Is(err, sql.ErrNoRows): // full
		if err := b.cfg.Overflow.Refusal(); err != nil {
			return res, false, err
		}
		if b.cfg.Overflow == driver.Block {
			return res, true, nil
		}
		if err := b.evictOldest(cctx, tx, seq, &res); err != nil {
			return driver.EnqueueResult{}, false, err
		}
	case err != nil:
		return res, false, calls.Fail(cctx, "enqueue", err)
	}
	if err := tx.commit(cctx); err != nil {
		return driver.EnqueueResult{}, false, calls.Fail(cctx, "enqueue", err)
	}
	return res, false, nil
}

// evictOldest moves, in tx, the oldest job not leased (but the job seq being enqueued) to the
// dead letters with queue.ReasonEvicted, in place of the job being enqueued, and records it in
// res; it returns queue.ErrFull if every other stored job is leased.
func (b *Backend) evictOldest(ctx context.Context, tx Tx, seq int64, res *driver.EnqueueResult) error {
	var (
		id    string
		fresh bool
	)
	err := tx.QueryRow(ctx, b.sql.evict, b.name, seq, driver.ErrEvicted.Error()).Scan(&id, &fresh)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.ErrFull
	}
	if err != nil {
		return calls.Fail(ctx, "evict the oldest job", err)
	}
	res.Evicted = append(res.Evicted, id)
	// The evicted job's room is the new job's: stored stays.
	res.DeadEvicted, err = b.countDead(ctx, tx, fresh, 0, res.DeadEvicted)
	return err
}

// countDead counts, in tx, a job that left the queue for the dead letters (a new dead letter
// if fresh, else one that replaced the dead letter of its ID), as countDeadN does.
func (b *Backend) countDead(ctx context.Context, tx Tx, fresh bool, leaving int, evicted []string) ([]string, error) {
	added := 0
	if fresh {
		added = 1
	}
	return b.countDeadN(ctx, tx, added, leaving, evicted)
}

// countDeadN counts, in tx, added new dead letters, and leaving jobs that left a queue with a
// capacity, and deletes the dead letters beyond the limit, oldest first; their IDs are
// appended to evicted.
func (b *Backend) countDeadN(ctx context.Context, tx Tx, added, leaving int, evicted []string) ([]string, error) {
	var over int64
	if err := tx.QueryRow(ctx, b.sql.buryCount, b.name, added, leaving).Scan(&over); err != nil {
		return evicted, calls.Fail(ctx, "count the dead letters", err)
	}
	if over == 0 {
		return evicted, nil
	}
	var list string // a JSON array: text that every driver carries
	if err := tx.QueryRow(ctx, b.sql.evictDead, b.name, over).Scan(&list); err != nil {
		return evicted, calls.Fail(ctx, "evict dead letters", err)
	}
	var ids []string
	if err := json.Unmarshal([]byte(list), &ids); err != nil {
		return evicted, fmt.Errorf("postgres: evict dead letters: %w", err)
	}
	return append(evicted, ids...), nil
}
