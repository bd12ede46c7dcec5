package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// settings are the queue's settings that every process must share: they live in the queue's
// row of the table queues. Durations are kept in microseconds.
type settings = driver.Shared

func settingsFor(cfg driver.Config) settings {
	s := driver.SharedOf(cfg)
	s.DedupHorizon = s.DedupHorizon.Truncate(time.Microsecond)
	return s
}

// load returns the queue's recorded settings.
func (b *Backend) load(ctx context.Context) (settings, error) {
	var s settings
	var horizon, lease int64
	err := b.pool.QueryRow(ctx, b.sql.agreeSelect, b.name).Scan(&s.Capacity, &s.Overflow, &horizon, &s.DeadLetterLimit, &lease)
	if err != nil {
		return s, calls.Fail(ctx, "read the queue's settings", err)
	}
	s.DedupHorizon, s.Lease = time.Duration(horizon)*time.Microsecond, time.Duration(lease)*time.Microsecond
	return s, nil
}

// agree makes the queue's recorded settings agree with mine: it records mine if the queue has
// no row yet (or WithReconfigure was given), and else fails if they differ. It returns the
// settings in force. Two processes racing to create the row are ordered by its primary key.
func (b *Backend) agree(ctx context.Context, mine settings) (settings, error) {
	if _, err := b.pool.Exec(ctx, b.sql.agreeInsert, b.name, mine.Capacity, mine.Overflow,
		mine.DedupHorizon.Microseconds(), mine.DeadLetterLimit); err != nil {
		return mine, calls.Fail(ctx, "record the queue's settings", err)
	}
	cur, err := b.load(ctx)
	if err != nil {
		return cur, err
	}
	if mine.Lease == 0 {
		mine.Lease = cur.Lease // a lease is agreed at CheckLease
	}
	err = mine.Diff(cur)
	switch {
	case err == nil && (mine.Lease == cur.Lease || mine.Lease == 0):
		return cur, nil
	case err == nil && cur.Lease == 0: // the first lease
		if _, err := b.pool.Exec(ctx, b.sql.setLease, b.name, mine.Lease.Microseconds()); err != nil {
			return cur, calls.Fail(ctx, "record the queue's lease", err)
		}
		return b.agree(ctx, mine) // another process may have set another meanwhile
	case !b.o.reconfigure:
		return cur, fmt.Errorf("postgres: queue %s: %w (%s)", b.name, err, driver.ReconfigureHint)
	}
	if _, err := b.pool.Exec(ctx, b.sql.reconfigure, b.name, mine.Capacity, mine.Overflow,
		mine.DedupHorizon.Microseconds(), mine.DeadLetterLimit, mine.Lease.Microseconds()); err != nil {
		return cur, calls.Fail(ctx, "change the queue's settings", err)
	}
	return mine, nil
}

// CheckLease implements driver.SharedLease: the lease is one setting of the queue, so that how
// long the job of a process that died waits for its redelivery is the queue's, not the
// consumer's that happened to take it. The first consumer's lease is recorded; a consumer
// asking for another fails with an error naming both, unless the backend was created
// WithReconfigure, which sets the queue's lease to this one.
func (b *Backend) CheckLease(ctx context.Context, lease time.Duration) error {
	ctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	return driver.AgreeLease(ctx, "postgres", lease, &b.mu, &b.set, func(ctx context.Context, mine settings) (settings, error) {
		mine.Lease = lease.Truncate(time.Microsecond)
		return b.agree(ctx, mine)
	})
}
