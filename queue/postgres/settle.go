package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/corral-go/corral/queue/driver"
)

// Every settling call is fenced by the lease number (driver.Delivery.Seq): each Receive, Nack,
// Release and expiry moves a job to a new number, so the call of a stale delivery changes
// nothing and fails with queue.ErrLeaseLost. A lease that ended but was not taken back yet
// still holds (nobody else has the job): its delivery can be settled, but not started.

// seqOf returns the job's seq of d, a delivery given to b's caller. It panics on a zero
// Backend: the settling methods start with it.
func (b *Backend) seqOf(d *driver.Delivery) (int64, error) {
	calls.Made(b.pool != nil)
	seq, ok := d.Token.(int64)
	if !ok {
		return 0, errors.New("postgres: delivery not from this backend")
	}
	return seq, nil
}

// Start implements driver.Backend: it spends the attempt d.Attempt, once per lease, and only
// while the lease runs (queue.ErrLeaseLost once it ended, even if it was not taken back yet:
// the job may be delivered again at any moment). The Start calls of a backend's workers that
// come at once are made in one query (see group).
func (b *Backend) Start(ctx context.Context, d *driver.Delivery) error {
	seq, err := b.seqOf(d)
	if err != nil {
		return err
	}
	if done, grouped, err := b.starts.do(ctx, leaseKey{seq, int64(d.Seq)}); grouped && (done || err != nil) {
		if err == nil {
			b.running.add(d, seq)
		}
		return err
	}
	if err := b.execOnLease(ctx, "start", b.sql.start, seq, int64(d.Seq)); err != nil {
		return err
	}
	b.running.add(d, seq)
	return nil
}

// execOnLease runs one statement that settles or starts a job on its lease, under the call
// timeout: it fails with driver.ErrLeaseLost if the statement changed no row (the lease ended,
// or another delivery holds the job), and by calls.Fail if the statement failed.
func (b *Backend) execOnLease(ctx context.Context, op, sql string, args ...any) error {
	cctx, cancel := b.call(ctx)
	defer cancel()
	tag, err := b.pool.Exec(cctx, sql, args...)
	if err != nil {
		return calls.Fail(cctx, op, err)
	}
	if tag.RowsAffected() == 0 {
		return driver.ErrLeaseLost
	}
	return nil
}

// startMany is the grouped Start of keys (see group).
func (b *Backend) startMany(ctx context.Context, keys []leaseKey) ([]int64, error) {
	if len(keys) == 1 {
		tag, err := b.pool.Exec(ctx, b.sql.startOne, keys[0].seq, keys[0].lease)
		if err != nil {
			return nil, calls.Fail(ctx, "start", err)
		}
		if tag.RowsAffected() == 0 {
			return nil, nil
		}
		return []int64{keys[0].seq}, nil
	}
	seqs, leases := arrays(keys)
	rows, err := b.pool.Query(ctx, b.sql.startMany, seqs, leases)
	if err != nil {
		return nil, calls.Fail(ctx, "start", err)
	}
	started, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, calls.Fail(ctx, "start", err)
	}
	return started, nil
}

// ackMany is the grouped Ack of keys, of a queue without a capacity (see group).
func (b *Backend) ackMany(ctx context.Context, keys []leaseKey) ([]int64, error) {
	var (
		acked    []int64
		notified int64
		row      pgx.Row
	)
	if len(keys) == 1 {
		row = b.pool.QueryRow(ctx, b.sql.ackOne, b.name, keys[0].seq, keys[0].lease, b.channel)
	} else {
		seqs, leases := arrays(keys)
		row = b.pool.QueryRow(ctx, b.sql.ackMany, b.name, seqs, leases, b.channel)
	}
	if err := row.Scan(&acked, &notified); err != nil {
		return nil, calls.Fail(ctx, "ack", err)
	}
	return acked, nil
}

// Extend implements driver.Backend. It does not wait for a transaction that holds the job's
// row (an AckTx in progress): the job is held, and nobody else can take it meanwhile.
func (b *Backend) Extend(ctx context.Context, d *driver.Delivery, lease time.Duration) error {
	seq, err := b.seqOf(d)
	if err != nil {
		return err
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	var canceled bool
	err = b.pool.QueryRow(cctx, b.sql.extend, seq, int64(d.Seq), micros(lease)).Scan(&canceled)
	switch {
	case err == nil && canceled:
		return driver.ErrCanceled // see admin.go
	case err == nil:
		return nil
	case !errors.Is(err, pgx.ErrNoRows):
		return calls.Fail(cctx, "extend the lease", err)
	}
	var cur int64
	err = b.pool.QueryRow(cctx, b.sql.leaseOf, seq).Scan(&cur)
	switch {
	case err == nil && cur == int64(d.Seq):
		return nil // a transaction holds the row: the lease cannot lapse under it
	case errors.Is(err, pgx.ErrNoRows) || err == nil:
		if done, err := b.ackedInTx(cctx, d); err != nil || done {
			return err
		}
		return driver.ErrLeaseLost
	}
	return calls.Fail(cctx, "extend the lease", err)
}

// Ack implements driver.Backend. A job acked by its handler's committed transaction (AckTx) is
// acked already: Ack then returns nil. In a queue without a capacity, the Ack calls of a
// backend's workers that come at once are made in one query (see group).
func (b *Backend) Ack(ctx context.Context, d *driver.Delivery) error {
	seq, err := b.seqOf(d)
	if err != nil {
		return err
	}
	defer b.running.remove(d)
	cctx, cancel := b.call(ctx)
	defer cancel()
	if done, err := b.ackedInTx(cctx, d); err != nil || done {
		return err
	}
	sql := b.sql.ack
	if b.cfg.Capacity > 0 {
		sql = b.sql.ackCounted
	} else if done, grouped, err := b.acks.do(ctx, leaseKey{seq, int64(d.Seq)}); grouped && (done || err != nil) {
		return err
	}
	var n, notified int64
	if err := b.pool.QueryRow(cctx, sql, b.name, seq, int64(d.Seq), b.channel).Scan(&n, &notified); err != nil {
		return calls.Fail(cctx, "ack", err)
	}
	if n == 0 {
		return driver.ErrLeaseLost
	}
	return nil
}

// Nack implements driver.Backend; a snooze also gives back the attempt of a started delivery,
// as Release does, and counts in the job's snoozes.
func (b *Backend) Nack(ctx context.Context, d *driver.Delivery, delay time.Duration, a driver.Attempt) error {
	seq, err := b.seqOf(d)
	if err != nil {
		return err
	}
	defer b.running.remove(d)
	hist, err := historyJSON(a)
	if err != nil {
		return err
	}
	sql := b.sql.nack
	if a.Snoozed {
		sql = b.sql.snooze
	}
	err = b.execOnLease(ctx, "nack", sql, b.name, seq, int64(d.Seq), micros(max(delay, 0)), hist, b.channel)
	if errors.Is(err, driver.ErrLeaseLost) {
		return b.settleCanceled(ctx, d, a)
	}
	return err
}

// Release implements driver.Backend: the job is ready again after delay, and an attempt its
// delivery spent (Start) is given back.
func (b *Backend) Release(ctx context.Context, d *driver.Delivery, delay time.Duration) error {
	seq, err := b.seqOf(d)
	if err != nil {
		return err
	}
	defer b.running.remove(d)
	err = b.execOnLease(ctx, "release", b.sql.release, b.name, seq, int64(d.Seq), b.channel, micros(delay))
	if errors.Is(err, driver.ErrLeaseLost) {
		return b.settleCanceled(ctx, d, driver.Attempt{})
	}
	return err
}

// Bury implements driver.Backend: in one transaction, the job leaves the jobs for the dead
// letters (replacing the dead letter of its ID, if there is one), and the dead letters beyond
// the limit are deleted, oldest first. The dead letter's Attempt is the job's handler runs
// (Start calls), whatever d.Attempt is; its history is the job's with a appended, unless a
// says no run and no error (Number 0, Error ""): a job delivered with no attempt left.
func (b *Backend) Bury(ctx context.Context, d *driver.Delivery, reason driver.Reason, a driver.Attempt) (driver.BuryResult, error) {
	var res driver.BuryResult
	seq, err := b.seqOf(d)
	if err != nil {
		return res, err
	}
	defer b.running.remove(d)
	hist := "[]"
	if a.Number != 0 || a.Error != "" {
		if hist, err = historyJSON(a); err != nil {
			return res, err
		}
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	err = pgx.BeginFunc(cctx, b.pool, func(tx pgx.Tx) error {
		var (
			fresh    bool
			notified *string
		)
		err := tx.QueryRow(cctx, b.sql.bury, b.name, seq, int64(d.Seq), string(reason), hist, b.channel).Scan(&fresh, &notified)
		if errors.Is(err, pgx.ErrNoRows) {
			return driver.ErrLeaseLost
		}
		if err != nil {
			return calls.Fail(cctx, "bury", err)
		}
		leaving := 0
		if b.cfg.Capacity > 0 {
			leaving = 1
		}
		res.DeadEvicted, err = b.countDead(cctx, tx, fresh, leaving, nil)
		return err
	})
	if err != nil && !errors.Is(err, driver.ErrLeaseLost) && !errors.Is(err, driver.ErrUnavailable) {
		err = calls.Fail(cctx, "bury", err) // the commit's
	}
	if err != nil {
		return driver.BuryResult{}, err
	}
	return res, nil
}

// attemptJSON is a queue.Attempt in a job's history (jobs.history, dead.history).
type attemptJSON struct {
	N   int       `json:"n"`
	S   time.Time `json:"s"`
	E   time.Time `json:"e"`
	Err string    `json:"err"`
	Z   bool      `json:"z,omitempty"` // snoozed
}

// historyJSON returns a one-attempt history, to append to a job's.
func historyJSON(a driver.Attempt) (string, error) {
	b, err := json.Marshal([]attemptJSON{{N: a.Number, S: a.Start, E: a.End, Err: a.Error, Z: a.Snoozed}})
	if err != nil {
		return "", fmt.Errorf("postgres: record attempt: %w", err)
	}
	return string(b), nil
}

// parseHistory returns the attempts of a history.
func parseHistory(raw []byte) ([]driver.Attempt, error) {
	var as []attemptJSON
	if err := json.Unmarshal(raw, &as); err != nil {
		return nil, fmt.Errorf("postgres: attempt history: %w", err)
	}
	out := make([]driver.Attempt, len(as))
	for i, a := range as {
		out[i] = driver.Attempt{Number: a.N, Start: a.S, End: a.E, Error: a.Err, Snoozed: a.Z}
	}
	return out, nil
}

// runningJobs are the deliveries a handler started on in this process, by job ID and attempt
// (what a handler's queue.Job carries), for AckTx to find their lease. An entry is added by
// Start and removed by the delivery's settling call. The zero value is ready to use.
type runningJobs struct {
	mu sync.Mutex // guards m
	m  map[runKey]*runEntry
}

type runKey struct {
	id      string
	attempt int
}

type runEntry struct {
	seq, lease int64
	// xid is the ID of the transaction in which AckTx deleted the job, 0 if none.
	xid int64
}

func (r *runningJobs) add(d *driver.Delivery, seq int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[runKey]*runEntry)
	}
	r.m[runKey{d.ID, d.Attempt}] = &runEntry{seq: seq, lease: int64(d.Seq)}
}

// get returns a copy of the entry of the job id at attempt.
func (r *runningJobs) get(id string, attempt int) (runEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[runKey{id, attempt}]
	if !ok {
		return runEntry{}, false
	}
	return *e, true
}

// setXID records that the transaction xid acked the delivery seq/lease.
func (r *runningJobs) setXID(id string, attempt int, lease, xid int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.m[runKey{id, attempt}]; ok && e.lease == lease {
		e.xid = xid
	}
}

// remove forgets d's entry, if it is d's.
func (r *runningJobs) remove(d *driver.Delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := runKey{d.ID, d.Attempt}
	if e, ok := r.m[k]; ok && e.lease == int64(d.Seq) {
		delete(r.m, k)
	}
}

// ackedInTx reports whether d's job was acked by AckTx in a transaction that committed.
func (b *Backend) ackedInTx(ctx context.Context, d *driver.Delivery) (bool, error) {
	e, ok := b.running.get(d.ID, d.Attempt)
	if !ok || e.lease != int64(d.Seq) || e.xid == 0 {
		return false, nil
	}
	var status *string
	if err := b.pool.QueryRow(ctx, b.sql.txStatus, e.xid).Scan(&status); err != nil {
		return false, calls.Fail(ctx, "ack", err)
	}
	return status != nil && *status == "committed", nil
}
