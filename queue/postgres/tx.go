package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/corral-go/corral/queue"
)

// EnqueueTx enqueues a job with payload into q inside the caller's transaction tx, and returns
// its ID: the job is stored by tx, so that it is invisible to every consumer until tx commits,
// and gone if tx rolls back. The job is made as q.Enqueue makes it (q's codec encodes the
// payload; WithID, WithKey, WithDelay, WithNotBefore and WithStartBy apply, and q's WithMaxWait
// when no start-by deadline is given), and stored by b, which must be the backend q was opened
// with (with another, the job goes to b's queue encoded by q's codec). A taken ID (stored, or within the dedup horizon) is
// reported as queue.ErrDuplicate, as by q.Enqueue, and leaves tx usable: nothing was stored.
// The receivers are notified at the commit.
//
// Unlike q.Enqueue, EnqueueTx does not count the job in q's Stats.Enqueued nor call the
// OnEnqueue hook (tx may roll back), and with a capacity it holds the queue's count of stored
// jobs locked from the enqueue to the end of tx, so that every other enqueue and settling call
// of the queue waits for tx: keep such transactions short. A job with an ordering key holds
// the key's enqueue lock to the end of tx the same way (the key's jobs are numbered in commit
// order).
func EnqueueTx[T any](ctx context.Context, tx pgx.Tx, b *Backend, q *queue.Queue[T], payload T, opts ...queue.EnqueueOption) (string, error) {
	if tx == nil {
		panic("postgres: EnqueueTx with a nil transaction")
	}
	m, err := q.Message(payload, opts...)
	if err != nil {
		return m.ID, err
	}
	if err := b.checkOpen(); err != nil {
		return m.ID, err
	}
	_, err = b.enqueue(ctx, tx, m)
	return m.ID, err
}

// AckTx acks job, which a handler of a consumer on b is running, inside the handler's own
// transaction tx: the job's row is deleted by tx, so that the handler's writes in tx and the
// ack commit together or not at all. Call it last in tx, then commit, then return nil: the
// consumer's own ack then finds the job acked and reports it so. If tx rolls back, the job is
// still the handler's, and the handler's return decides as usual (an error retries it). If
// the handler returns an error after tx committed, the job is done all the same: the
// consumer's retry finds it gone (and counts it abandoned).
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
func AckTx[T any](ctx context.Context, tx pgx.Tx, b *Backend, job queue.Job[T]) error {
	if tx == nil {
		panic("postgres: AckTx with a nil transaction")
	}
	if err := b.checkOpen(); err != nil {
		return err
	}
	e, ok := b.running.get(job.ID, job.Attempt)
	if !ok {
		return fmt.Errorf("postgres: AckTx of job %s (attempt %d), which no handler of this backend runs: %w",
			job.ID, job.Attempt, queue.ErrLeaseLost)
	}
	sql := b.sql.ackTx
	if b.cfg.Capacity > 0 {
		sql = b.sql.ackTxCounted
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	var n, notified, xid int64
	if err := tx.QueryRow(cctx, sql, b.name, e.seq, e.lease, b.channel).Scan(&n, &notified, &xid); err != nil {
		return fail(cctx, "ack in the transaction", err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: AckTx of job %s (attempt %d): %w", job.ID, job.Attempt, queue.ErrLeaseLost)
	}
	b.running.setXID(job.ID, job.Attempt, e.lease, xid)
	return nil
}
