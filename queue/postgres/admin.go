package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/corral-go/corral/queue/driver"
)

// The operator's verbs (driver.Admin), on the tables of migration 0006.
//
// A pause is the queue's row's paused flag, which every claim reads in the statement that
// claims: once SetPaused(true) has returned, no Receive of any process takes a job (a claim
// that began before may still deliver what it took). Resume notifies the receivers.
//
// A cancel marks the job's row (canceled). A waiting job so marked, or one whose lease ended,
// is moved to the dead letters at once with ReasonCanceled. A job in flight stays with its
// consumer, which learns of the cancel from its next lease renewal (Extend returns
// ErrCanceled); a Nack or Release of it buries it instead, and if its process died, the first
// Receive that takes its lease back buries it (a claim never delivers a marked job). A cancel
// thus reaches a running handler in any process within the consumer's renewal period.

// adminStatements holds the rendered SQL of the verbs.
type adminStatements struct {
	// jobs is the listing of the queue's jobs and dead letters as one relation, with the
	// columns jobColumnsAdmin; the verbs add their WHERE.
	jobs string
	// mark marks the job $2 cancelled and returns whether it was in flight.
	mark string
	// deadExists reports whether $2 has a dead letter.
	deadExists string
	// buryCanceled moves the marked jobs that are not leased (waiting, or their lease ended)
	// to the dead letters with reason canceled and an entry of attempt 0 with the error $2,
	// notifies $3 for those with a key, and returns for each whether its dead letter is new.
	buryCanceled string
	// pause sets the queue's paused flag to $2, and notifies $3 on resume.
	pause string
}

func newAdminStatements(schema string) adminStatements {
	s := adminStatements{
		jobs: `SELECT * FROM (
	SELECT CASE WHEN lease_until > now() THEN 'in_flight' WHEN lease_until IS NULL AND ready_at > now() THEN 'delayed'
			ELSE 'ready' END AS state,
		id, coalesce(key, '') AS key, version, body, enqueued_at, not_before, start_by, attempts, history,
		ready_at, lease_until, canceled, '' AS reason, NULL::timestamptz AS at
	FROM {{schema}}.jobs WHERE queue = $1
	UNION ALL
	SELECT 'dead', id, coalesce(key, ''), version, body, enqueued_at, not_before, start_by, attempts, history,
		NULL, NULL, false, reason, at
	FROM {{schema}}.dead WHERE queue = $1
) AS j`,
		mark:       `UPDATE {{schema}}.jobs SET canceled = true WHERE queue = $1 AND id = $2 RETURNING lease_until > now()`,
		deadExists: `SELECT EXISTS (SELECT 1 FROM {{schema}}.dead WHERE queue = $1 AND id = $2)`,
		buryCanceled: `WITH v AS (DELETE FROM {{schema}}.jobs
	WHERE queue = $1 AND canceled AND (lease_until IS NULL OR lease_until <= now()) RETURNING *)
INSERT INTO {{schema}}.dead AS d (queue, id, key, version, body, enqueued_at, not_before, start_by, attempts, reason, history, at)
SELECT queue, id, key, version, body, enqueued_at, not_before, start_by, attempts, 'canceled',
	history || jsonb_build_array(jsonb_build_object('n', 0, 's', now(), 'e', now(), 'err', $2::text)), now()
FROM v
ON CONFLICT (queue, id) DO UPDATE SET dseq = nextval('{{schema}}.dead_seq'), key = EXCLUDED.key, version = EXCLUDED.version, body = EXCLUDED.body,
	enqueued_at = EXCLUDED.enqueued_at, not_before = EXCLUDED.not_before, start_by = EXCLUDED.start_by,
	attempts = EXCLUDED.attempts, reason = EXCLUDED.reason, history = EXCLUDED.history, at = EXCLUDED.at
RETURNING (d.xmax = 0), CASE WHEN d.key IS NOT NULL THEN pg_notify($3, $1)::text END`,
		pause: `UPDATE {{schema}}.queues SET paused = $2 WHERE name = $1
RETURNING CASE WHEN NOT $2 THEN pg_notify($3, $1)::text END`,
	}
	for _, p := range []*string{&s.jobs, &s.mark, &s.deadExists, &s.buryCanceled, &s.pause} {
		*p = render(*p, schema)
	}
	return s
}

// where returns the WHERE clause and its arguments (after $1, the queue) that select f's
// jobs (after f.After if after), or the job id if not "".
func where(f *driver.Filter, id string, after bool) (string, []any) {
	var (
		conds []string
		args  []any
	)
	arg := func(v any) string { // the placeholder of v
		args = append(args, v)
		return "$" + strconv.Itoa(len(args)+1)
	}
	switch {
	case id != "":
		conds = append(conds, "id = "+arg(id))
	case f.State == "":
		conds = append(conds, "state <> 'dead'")
	default:
		conds = append(conds, "state = "+arg(string(f.State)))
	}
	if f.IDPrefix != "" {
		p := arg(f.IDPrefix)
		conds = append(conds, "left(id, length("+p+"::text)) = "+p+"::text")
	}
	if f.Key != "" {
		conds = append(conds, "key = "+arg(f.Key))
	}
	if f.Reason != "" {
		conds = append(conds, "reason = "+arg(string(f.Reason)))
	}
	if !f.EnqueuedBefore.IsZero() {
		conds = append(conds, "enqueued_at < "+arg(f.EnqueuedBefore))
	}
	if f.MinVersion != 0 {
		conds = append(conds, "version >= "+arg(f.MinVersion))
	}
	if after && !f.After.IsZero() {
		at, id := arg(f.After.EnqueuedAt), arg(f.After.ID)
		conds = append(conds, "(enqueued_at > "+at+" OR enqueued_at = "+at+` AND id COLLATE "C" > `+id+")")
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// List implements driver.Admin.
func (b *Backend) List(ctx context.Context, f driver.Filter) ([]driver.JobInfo, error) {
	if err := b.life.Check(calls); err != nil {
		return nil, err
	}
	if err := f.CheckPage(); err != nil {
		return nil, err
	}
	w, args := where(&f, "", true)
	q := b.sql.adm.jobs + w + ` ORDER BY enqueued_at, id COLLATE "C" LIMIT ` + strconv.Itoa(f.Limit)
	return b.queryJobs(ctx, "list jobs", q, args)
}

// Count implements driver.Admin.
func (b *Backend) Count(ctx context.Context, f driver.Filter) (int, error) {
	cctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	if err != nil {
		return 0, err
	}
	defer cancel()
	w, args := where(&f, "", false)
	var n int
	if err := b.pool.QueryRow(cctx, "SELECT count(*) FROM ("+b.sql.adm.jobs+w+") AS c", append([]any{b.name}, args...)...).Scan(&n); err != nil {
		return 0, calls.Fail(cctx, "count jobs", err)
	}
	return n, nil
}

// Get implements driver.Admin.
func (b *Backend) Get(ctx context.Context, id string) (driver.JobInfo, error) {
	if err := b.life.Check(calls); err != nil {
		return driver.JobInfo{}, err
	}
	w, args := where(&driver.Filter{}, id, false)
	jobs, err := b.queryJobs(ctx, "get a job", b.sql.adm.jobs+w+" ORDER BY state = 'dead' LIMIT 1", args)
	if err != nil {
		return driver.JobInfo{}, err
	}
	if len(jobs) == 0 {
		return driver.JobInfo{}, driver.ErrNoJob
	}
	return jobs[0], nil
}

// queryJobs runs the listing q with args (after the queue's name).
func (b *Backend) queryJobs(ctx context.Context, what, q string, args []any) ([]driver.JobInfo, error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	rows, err := b.pool.Query(cctx, q, append([]any{b.name}, args...)...)
	if err != nil {
		return nil, calls.Fail(cctx, what, err)
	}
	defer rows.Close()
	var out []driver.JobInfo
	for rows.Next() {
		var (
			info                                 driver.JobInfo
			state, reason                        string
			notBefore, startBy, readyAt, leaseTo *time.Time
			deadAt                               *time.Time
			hist                                 []byte
		)
		m := &info.Message
		if err := rows.Scan(&state, &m.ID, &m.Key, &m.Version, &m.Body, &m.EnqueuedAt, &notBefore, &startBy, &m.Attempt,
			&hist, &readyAt, &leaseTo, &info.Canceling, &reason, &deadAt); err != nil {
			return nil, calls.Fail(cctx, what, err)
		}
		m.NotBefore, m.StartBy = derefTime(notBefore), derefTime(startBy)
		info.State, info.Reason, info.DeadAt = driver.JobState(state), driver.Reason(reason), derefTime(deadAt)
		switch info.State {
		case driver.StateDelayed:
			info.NextRun = derefTime(readyAt)
		case driver.StateInFlight:
			info.LeaseEnd = derefTime(leaseTo)
		}
		info.Canceling = info.Canceling && info.State == driver.StateInFlight
		if info.History, err = parseHistory(hist); err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, calls.Fail(cctx, what, err)
	}
	return out, nil
}

// Cancel implements driver.Admin.
func (b *Backend) Cancel(ctx context.Context, id string) error {
	cctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	var inFlight *bool
	err = b.pool.QueryRow(cctx, b.sql.adm.mark, b.name, id).Scan(&inFlight)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		var dead bool
		if err := b.pool.QueryRow(cctx, b.sql.adm.deadExists, b.name, id).Scan(&dead); err != nil {
			return calls.Fail(cctx, "cancel", err)
		}
		if dead {
			return nil
		}
		return driver.ErrNoJob
	case err != nil:
		return calls.Fail(cctx, "cancel", err)
	case inFlight != nil && *inFlight:
		return nil // its consumer learns of it from its next renewal
	}
	return b.buryCanceled(cctx)
}

// buryCanceled moves the cancelled jobs that no lease holds to the dead letters, counting
// them, in one transaction. The dead letters it evicts beyond the limit are not reported: no
// hook sees an operator's cancel.
func (b *Backend) buryCanceled(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, b.sql.adm.buryCanceled, b.name, driver.ErrCanceled.Error(), b.channel)
		if err != nil {
			return err
		}
		added, left := 0, 0
		for rows.Next() {
			var (
				fresh    bool
				notified *string
			)
			if err := rows.Scan(&fresh, &notified); err != nil {
				rows.Close()
				return err
			}
			left++
			if fresh {
				added++
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if b.cfg.Capacity == 0 {
			left = 0
		}
		if added == 0 && left == 0 {
			return nil
		}
		_, err = b.countDeadN(ctx, tx, added, left, nil)
		return err
	})
	if err != nil {
		return calls.Fail(ctx, "bury cancelled jobs", err)
	}
	return nil
}

// settleCanceled is what Nack and Release do when their statement found no lease to settle:
// if the lease holds and an operator cancelled the job, it buries it with ReasonCanceled and
// the attempt a; else the lease was lost.
func (b *Backend) settleCanceled(ctx context.Context, d *driver.Delivery, a driver.Attempt) error {
	seq, _ := b.seqOf(d)
	cctx, cancel := b.call(ctx)
	var canceled bool
	err := b.pool.QueryRow(cctx, b.sql.canceledOf, seq, int64(d.Seq)).Scan(&canceled)
	cancel()
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && !canceled:
		return driver.ErrLeaseLost
	case err != nil:
		return calls.Fail(cctx, "settle", err)
	}
	_, err = b.Bury(ctx, d, driver.ReasonCanceled, a)
	return err
}

// SetPaused implements driver.Admin.
func (b *Backend) SetPaused(ctx context.Context, paused bool) error {
	cctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	var notified *string
	if err := b.pool.QueryRow(cctx, b.sql.adm.pause, b.name, paused, b.channel).Scan(&notified); err != nil {
		return calls.Fail(cctx, "pause", err)
	}
	return nil
}

var _ driver.Admin = (*Backend)(nil)
