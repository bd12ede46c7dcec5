package promcorral

import (
	"context"
	"time"
)

// cached is a read of a source that asks a backend (a queue's or a Share's Stats), made at
// most once per interval and bounded by a timeout; scrapes in between get the last values
// read. It is safe for concurrent use.
type cached[T any] struct {
	read     func(ctx context.Context) (T, error)
	keep     func(last *T, failed *T) // if not nil: what a failed read still gives, copied into last
	timeout  time.Duration
	interval time.Duration

	// lock (capacity 1) guards the fields below. It is held through a read, so that reads
	// are one at a time; a channel rather than a sync.Mutex, because a scrape may wait on it
	// for as long as a read takes.
	lock   chan struct{}
	readAt time.Time // when the last read started (zero before the first)
	last   T         // the values of the last read that succeeded
	ok     bool      // a read has succeeded: last holds its values
	errors uint64    // reads that failed or timed out
}

// newCached returns the cache of read; keep, if not nil, copies into the last values read
// what a failed read returns all the same (a queue's Health).
func newCached[T any](read func(context.Context) (T, error), keep func(last, failed *T), timeout, interval time.Duration) *cached[T] {
	return &cached[T]{read: read, keep: keep, timeout: timeout, interval: interval, lock: make(chan struct{}, 1)}
}

// get returns the values to export, whether any read has succeeded yet, and the count of
// failed reads. It reads the source again if the last read started at least an interval ago
// (or none did); a scrape that comes while another reads waits for that read.
func (c *cached[T]) get() (T, bool, uint64) {
	c.lock <- struct{}{}
	defer func() { <-c.lock }()
	now := time.Now()
	if c.readAt.IsZero() || now.Sub(c.readAt) >= c.interval {
		c.readAt = now
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		v, err := c.read(ctx)
		cancel()
		switch {
		case err == nil:
			c.last, c.ok = v, true
		case c.ok && c.keep != nil:
			c.errors++
			c.keep(&c.last, &v)
		default:
			c.errors++
		}
	}
	return c.last, c.ok, c.errors
}
