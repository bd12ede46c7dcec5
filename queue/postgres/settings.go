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
// a *driver.SettingsError, or nil. The lease is compared only when both have one.
func (s settings) diff(q settings) error {
	lease := driver.Setting{Name: "lease"}
	if s.Lease != 0 && q.Lease != 0 {
		lease.Mine, lease.Queue = s.Lease, q.Lease
	}
	return driver.CompareSettings(
		driver.Setting{Name: "capacity", Mine: s.Capacity, Queue: q.Capacity},
		driver.Setting{Name: "overflow", Mine: s.Overflow, Queue: q.Overflow},
		driver.Setting{Name: "dedup horizon", Mine: s.DedupHorizon, Queue: q.DedupHorizon},
		driver.Setting{Name: "dead-letter limit", Mine: s.DeadLetterLimit, Queue: q.DeadLetterLimit},
		lease,
	)
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
	err = mine.diff(cur)
	switch {
	case err == nil && (mine.Lease == cur.Lease || mine.Lease == 0):
		return cur, nil
	case err == nil && cur.Lease == 0: // the first lease
		if _, err := b.pool.Exec(ctx, b.sql.setLease, b.name, mine.Lease.Microseconds()); err != nil {
			return cur, calls.Fail(ctx, "record the queue's lease", err)
		}
		return b.agree(ctx, mine) // another process may have set another meanwhile
	case !b.o.reconfigure:
		return cur, fmt.Errorf("postgres: queue %s: %w (%s)", b.name, err, reconfigureHint)
	}
	if _, err := b.pool.Exec(ctx, b.sql.reconfigure, b.name, mine.Capacity, mine.Overflow,
		mine.DedupHorizon.Microseconds(), mine.DeadLetterLimit, mine.Lease.Microseconds()); err != nil {
		return cur, calls.Fail(ctx, "change the queue's settings", err)
	}
	return mine, nil
}

// reconfigureHint ends the error of a shared setting that differs from the queue's.
const reconfigureHint = "WithReconfigure changes it, with every other process stopped"

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
