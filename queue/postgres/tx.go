package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

// Tx is a transaction on the queue's database that EnqueueTx and AckTx run their statements
// in: a pgx.Tx, or a *sql.Tx of database/sql wrapped by SQLTx. Its two methods are pgx.Tx's;
// EnqueueTx and AckTx call them one at a time, from the calling goroutine, and never commit
// or roll back the transaction: that stays the caller's. Pass a transaction, not a pool or a
// connection outside one: a statement run outside a transaction commits at once.
type Tx interface {
	// Exec runs a statement that returns no rows.
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	// QueryRow runs a statement that returns at most one row.
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SQLTx returns tx, a database/sql transaction on the queue's database, as a Tx for EnqueueTx
// and AckTx, which then hold for tx all they promise for a pgx.Tx: a job enqueued in tx is
// invisible until tx commits and gone if it rolls back, a taken ID is queue.ErrDuplicate and
// leaves tx usable, and a job acked in tx is acked if and only if tx commits.
//
// The statements that EnqueueTx and AckTx send through tx take only arguments of
// database/sql's driver.Value types (string, []byte, int64, float64, time.Time, nil) and
// return only bigint, boolean and text columns, so that they need nothing of pgx's own type
// handling; they are tested with pgx's driver (github.com/jackc/pgx/v5/stdlib) as it comes and
// with database/sql's default argument conversion in front of it. A failure that the driver
// reports as driver.ErrBadConn matches queue.ErrUnavailable; the errors of another driver than
// pgx's are otherwise returned wrapped, not classified.
//
// The returned Tx's Exec returns an empty CommandTag. EnqueueBatchTx needs a pgx.Tx: it sends
// arrays, which database/sql does not carry between drivers.
func SQLTx(tx *sql.Tx) Tx {
	if tx == nil {
		panic("postgres: SQLTx of a nil transaction")
	}
	return sqlTx{tx}
}

// sqlTx is a database/sql transaction as a Tx.
type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Exec(ctx context.Context, query string, args ...any) (pgconn.CommandTag, error) {
	_, err := t.tx.ExecContext(ctx, query, args...)
	return pgconn.CommandTag{}, err
}

func (t sqlTx) QueryRow(ctx context.Context, query string, args ...any) pgx.Row {
	return t.tx.QueryRowContext(ctx, query, args...)
}

// EnqueueTx enqueues a job with payload into q inside the caller's transaction tx (a pgx.Tx,
// or a database/sql transaction wrapped by SQLTx), and returns its ID: the job is stored by tx,
// so that it is invisible to every consumer until tx commits, and gone if tx rolls back. The
// job is made as q.Enqueue makes it (q's codec encodes the payload; WithID, WithKey,
// WithDelay, WithNotBefore and WithStartBy apply, and q's WithMaxWait when no start-by
// deadline is given), and stored by b, which must be the backend q was opened with (with
// another, the job goes to b's queue encoded by q's codec). A taken ID (stored, or within the
// dedup horizon) is reported as queue.ErrDuplicate, as by q.Enqueue, and leaves tx usable:
// nothing was stored. The receivers are notified at the commit.
//
// Unlike q.Enqueue, EnqueueTx does not count the job in q's Stats.Enqueued nor call the
// OnEnqueue hook (tx may roll back), and with a capacity it holds the queue's count of stored
// jobs locked from the enqueue to the end of tx, so that every other enqueue and settling call
// of the queue waits for tx: keep such transactions short. With a capacity, the enqueue runs
// in a savepoint of tx, so that a job refused by the overflow policy (queue.ErrFull,
// queue.ErrDropped) leaves nothing in tx and tx usable. A job with an ordering key holds the
// key's enqueue lock to the end of tx the same way (the key's jobs are numbered in commit
// order): an enqueue of the same key meanwhile waits for tx, as Backend.Enqueue says.
func EnqueueTx[T any](ctx context.Context, tx Tx, b *Backend, q *queue.Queue[T], payload T, opts ...queue.EnqueueOption) (string, error) {
	if tx == nil {
		panic("postgres: EnqueueTx with a nil transaction")
	}
	m, err := q.Message(payload, opts...)
	if err != nil {
		return m.ID, err
	}
	if err := b.life.Check(calls); err != nil {
		return m.ID, err
	}
	_, err = b.enqueue(ctx, tx, m)
	return m.ID, err
}

// AckTx acks job, which a handler of a consumer on b is running, inside the handler's own
// transaction tx (a pgx.Tx, or a database/sql transaction wrapped by SQLTx): the job's row is
// deleted by tx, so that the handler's writes in tx and the ack commit together or not at
// all. Call it last in tx, then commit, then return nil: the consumer's own ack then finds the
// job acked and reports it so. If tx rolls back, the job is still the handler's, and the
// handler's return decides as usual (an error retries it). If the handler returns an error
// after tx committed, the job is done all the same: the consumer's retry finds it gone (and
// counts it abandoned).
//
// AckTx fails with an error matching queue.ErrLeaseLost if the job's lease was lost (it
// expired and the job was delivered again) or job is not one a handler of b runs in this
// process: roll tx back then. While tx holds the job's row, nobody else can take the job, even
// if its lease ends, and the lease renewals do not wait for tx.
//
// What is exactly once: the effects of the handler's transaction and the job's removal. A job
// whose handler committed its tx with AckTx is never delivered again, and a job whose handler's
// tx did not commit is not removed, so of all the runs of a job, exactly one commits its
// transaction. What is not: the handler may run more than once (its process dies, its lease
// ends, its tx fails to commit), and what it does outside tx (calls to other services, writes to
// other databases, memory) happens once per run. tx must be on the queue's database; use the
// default isolation, READ COMMITTED (under REPEATABLE READ or SERIALIZABLE, a lease renewal
// after tx began makes the delete fail with a serialization error). With a capacity, tx holds
// the queue's count of stored jobs locked from AckTx to its end.
func AckTx[T any](ctx context.Context, tx Tx, b *Backend, job queue.Job[T]) error {
	if tx == nil {
		panic("postgres: AckTx with a nil transaction")
	}
	if err := b.life.Check(calls); err != nil {
		return err
	}
	e, ok := b.running.get(job.ID, job.Attempt)
	if !ok {
		return fmt.Errorf("postgres: AckTx of job %s (attempt %d), which no handler of this backend runs: %w",
			job.ID, job.Attempt, driver.ErrLeaseLost)
	}
	stmt := b.sql.ackTx
	if b.cfg.Capacity > 0 {
		stmt = b.sql.ackTxCounted
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	var n, notified, xid int64
	if err := tx.QueryRow(cctx, stmt, b.name, e.seq, e.lease, b.channel).Scan(&n, &notified, &xid); err != nil {
		return calls.Fail(cctx, "ack in the transaction", err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: AckTx of job %s (attempt %d): %w", job.ID, job.Attempt, driver.ErrLeaseLost)
	}
	b.running.setXID(job.ID, job.Attempt, e.lease, xid)
	return nil
}
