package postgres

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/corral-go/corral/queue/driver"
)

// deadPage is how many dead letters DeadLetters reads per query.
const deadPage = 100

// DeadLetters implements driver.Backend: the dead letters in burial order, oldest first, read a
// page at a time (each page a query with its own deadline). A dead letter buried while the
// listing runs is listed if it comes after the page being read.
func (b *Backend) DeadLetters(ctx context.Context) iter.Seq2[driver.DeadMessage, error] {
	calls.Made(b.pool != nil)
	return func(yield func(driver.DeadMessage, error) bool) {
		if err := b.life.Check(calls); err != nil {
			yield(driver.DeadMessage{}, err)
			return
		}
		after := int64(0)
		for {
			page, err := b.deadPage(ctx, after)
			if err != nil {
				yield(driver.DeadMessage{}, err)
				return
			}
			for _, p := range page {
				if !yield(p.dm, nil) {
					return
				}
				after = p.dseq
			}
			if len(page) < deadPage {
				return
			}
		}
	}
}

type deadRow struct {
	dseq int64
	dm   driver.DeadMessage
}

// deadPage reads the dead letters buried after dseq after.
func (b *Backend) deadPage(ctx context.Context, after int64) ([]deadRow, error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	rows, err := b.pool.Query(cctx, b.sql.deadPage, b.name, after, deadPage)
	if err != nil {
		return nil, calls.Fail(cctx, "list the dead letters", err)
	}
	defer rows.Close()
	var out []deadRow
	for rows.Next() {
		var (
			r                  deadRow
			notBefore, startBy *time.Time
			reason             string
			hist               []byte
			headers            *string
		)
		m := &r.dm.Message
		if err := rows.Scan(&r.dseq, &m.ID, &m.Key, &m.Version, &headers, &m.Body, &m.EnqueuedAt, &notBefore, &startBy, &m.Attempt,
			&reason, &hist, &r.dm.At); err != nil {
			return nil, calls.Fail(cctx, "list the dead letters", err)
		}
		m.NotBefore, m.StartBy = derefTime(notBefore), derefTime(startBy)
		if m.Headers, err = parseHeaders(headers); err != nil {
			return nil, err
		}
		r.dm.Reason = driver.Reason(reason)
		if r.dm.History, err = parseHistory(hist); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, calls.Fail(cctx, "list the dead letters", err)
	}
	return out, nil
}

// Redrive implements driver.Backend: in one transaction the dead letter leaves the dead letters
// and comes back as a new, ready job (a fresh attempt count, enqueued now, with no delay or
// start-by deadline; the dedup horizon does not apply to it). A queue at capacity refuses it
// with queue.ErrFull (it does not block). A job with a key that another transaction holds
// waits for it, as Enqueue says.
func (b *Backend) Redrive(ctx context.Context, id string) error {
	if err := b.life.Check(calls); err != nil {
		return err
	}
	_, err := b.untilStored(ctx, func() (driver.EnqueueResult, bool, error) {
		err := b.redriveOnce(ctx, id)
		if errors.Is(err, errKeyBusy) {
			return driver.EnqueueResult{}, true, nil
		}
		return driver.EnqueueResult{}, false, err
	})
	return err
}

// redriveOnce is one try of Redrive, in a transaction: errKeyBusy (and nothing done) if
// another transaction holds the job's key.
func (b *Backend) redriveOnce(ctx context.Context, id string) error {
	cctx, cancel := b.call(ctx)
	defer cancel()
	err := pgx.BeginFunc(cctx, b.pool, func(tx pgx.Tx) error {
		var (
			key     string
			version int
			headers *string
			body    []byte
		)
		err := tx.QueryRow(cctx, b.sql.redriveTake, b.name, id).Scan(&key, &version, &headers, &body)
		if errors.Is(err, pgx.ErrNoRows) {
			return driver.ErrNotFound
		}
		if err != nil {
			return err
		}
		m := driver.Message{ID: id, Key: key, Version: version, Body: body, EnqueuedAt: time.Now()}
		if m.Headers, err = parseHeaders(headers); err != nil {
			return err
		}
		if _, err := b.insert(cctx, tx, m, false); err != nil { // the horizon is not for a redriven job
			return err
		}
		if _, err := tx.Exec(cctx, b.sql.redriveCount, b.name); err != nil {
			return err
		}
		if b.cfg.Capacity > 0 {
			var stored int64
			err := tx.QueryRow(cctx, b.sql.reserve, b.name, 1).Scan(&stored)
			if errors.Is(err, pgx.ErrNoRows) {
				return driver.ErrFull
			}
			return err
		}
		return nil
	})
	switch {
	case err == nil, errors.Is(err, driver.ErrNotFound), errors.Is(err, driver.ErrDuplicate), errors.Is(err, driver.ErrFull),
		errors.Is(err, errKeyBusy):
		return err
	}
	return calls.Fail(cctx, "redrive", err)
}

// Purge implements driver.Backend.
func (b *Backend) Purge(ctx context.Context, id string) error {
	cctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	var dead int64
	err = b.pool.QueryRow(cctx, b.sql.purge, b.name, id).Scan(&dead)
	if errors.Is(err, pgx.ErrNoRows) {
		return driver.ErrNotFound
	}
	if err != nil {
		return calls.Fail(cctx, "purge", err)
	}
	return nil
}

// Stats implements driver.Backend: one query counts the queue's jobs by state, as of the
// database's clock (a job whose lease ended but was not taken back yet is ready), with the
// dead letters' count and the oldest enqueue time.
func (b *Backend) Stats(ctx context.Context) (driver.Stats, error) {
	var s driver.Stats
	cctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	if err != nil {
		return s, err
	}
	defer cancel()
	var (
		oldest *time.Time
		dead   *int64
	)
	if err := b.pool.QueryRow(cctx, b.sql.stats, b.name).Scan(&s.Ready, &s.InFlight, &s.Delayed, &oldest, &dead, &s.Paused); err != nil {
		return s, calls.Fail(cctx, "stats", err)
	}
	s.Oldest = derefTime(oldest)
	if dead != nil {
		s.Dead = int(*dead)
	}
	return s, nil
}
