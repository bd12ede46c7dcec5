package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// settings are the queue's settings that every process must share: they live in the queue's
// row of the table queues, written by the first process that opens the queue and compared by
// every later one, so that no process can weaken another's guarantee by opening the queue
// with, say, a shorter dedup horizon. Durations are kept in microseconds.
type settings struct {
	Capacity        int
	Overflow        string
	DedupHorizon    time.Duration
	DeadLetterLimit int
	// Lease is the consumers' backend lease, set by the first CheckLease; zero until then.
	Lease time.Duration
}

func settingsFor(cfg driver.Config) settings {
	cfg = cfg.WithDefaults()
	return settings{
		Capacity: cfg.Capacity, Overflow: cfg.Overflow.String(),
		DedupHorizon: cfg.DedupHorizon.Truncate(time.Microsecond), DeadLetterLimit: cfg.DeadLetterLimit,
	}
}

// diff returns the first setting in which s (this process's) and q (the queue's) differ, as
// an error naming it and both values, or nil. The lease is compared only when both have one.
func (s settings) diff(q settings) error {
	type field struct {
		name        string
		mine, queue any
	}
	for _, f := range []field{
		{"capacity", s.Capacity, q.Capacity},
		{"overflow", s.Overflow, q.Overflow},
		{"dedup horizon", s.DedupHorizon, q.DedupHorizon},
		{"dead-letter limit", s.DeadLetterLimit, q.DeadLetterLimit},
	} {
		if f.mine != f.queue {
			return &settingError{f.name, fmt.Sprint(f.mine), fmt.Sprint(f.queue)}
		}
	}
	if s.Lease != 0 && q.Lease != 0 && s.Lease != q.Lease {
		return &settingError{"lease", s.Lease.String(), q.Lease.String()}
	}
	return nil
}

// settingError is a shared setting that differs from the queue's.
type settingError struct{ setting, mine, queue string }

func (e *settingError) Error() string {
	return fmt.Sprintf("%s %s differs from the queue's %s, set by another process "+
		"(WithReconfigure changes it, with every other process stopped)", e.setting, e.mine, e.queue)
}

// load returns the queue's recorded settings.
func (b *Backend) load(ctx context.Context) (settings, error) {
	var s settings
	var horizon, lease int64
	err := b.pool.QueryRow(ctx, b.sql.agreeSelect, b.name).Scan(&s.Capacity, &s.Overflow, &horizon, &s.DeadLetterLimit, &lease)
	if err != nil {
		return s, fail(ctx, "read the queue's settings", err)
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
		return mine, fail(ctx, "record the queue's settings", err)
	}
	cur, err := b.load(ctx)
	if err != nil {
		return cur, err
	}
	if mine.Lease == 0 {
		mine.Lease = cur.Lease // a lease is agreed at CheckLease
	}
	err = mine.diff(cur)
	switch {
	case err == nil && (mine.Lease == cur.Lease || mine.Lease == 0):
		return cur, nil
	case err == nil && cur.Lease == 0: // the first lease
		if _, err := b.pool.Exec(ctx, b.sql.setLease, b.name, mine.Lease.Microseconds()); err != nil {
			return cur, fail(ctx, "record the queue's lease", err)
		}
		return b.agree(ctx, mine) // another process may have set another meanwhile
	case !b.o.reconfigure:
		return cur, fmt.Errorf("postgres: queue %s: %w", b.name, err)
	}
	if _, err := b.pool.Exec(ctx, b.sql.reconfigure, b.name, mine.Capacity, mine.Overflow,
		mine.DedupHorizon.Microseconds(), mine.DeadLetterLimit, mine.Lease.Microseconds()); err != nil {
		return cur, fail(ctx, "change the queue's settings", err)
	}
	return mine, nil
}

// CheckLease implements driver.SharedLease: the lease is one setting of the queue, so that how
// long the job of a process that died waits for its redelivery is the queue's, not the
// consumer's that happened to take it. The first consumer's lease is recorded; a consumer
// asking for another fails with an error naming both, unless the backend was created
// WithReconfigure, which sets the queue's lease to this one.
func (b *Backend) CheckLease(ctx context.Context, lease time.Duration) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if lease <= 0 {
		return fmt.Errorf("postgres: lease %v must be positive", lease)
	}
	ctx, cancel := b.call(ctx)
	defer cancel()
	b.mu.Lock()
	mine := b.set
	b.mu.Unlock()
	mine.Lease = lease.Truncate(time.Microsecond)
	set, err := b.agree(ctx, mine)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.set = set
	b.mu.Unlock()
	return nil
}
