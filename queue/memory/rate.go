package memory

import (
	"context"
	"sync"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// rate is the queue's rate limit window (driver.RateLimiter): the times of
// the starts taken, oldest first, as many as the largest limit asked.
type rate struct {
	mu     sync.Mutex
	starts []time.Time
}

// TakeStart implements driver.RateLimiter, exactly: a sliding window of
// the starts this backend gave, which are every start of its queue.
func (m *Backend) TakeStart(ctx context.Context, n int, per time.Duration) (bool, time.Duration, error) {
	if m.closed.Load() {
		return false, 0, driver.ErrClosed
	}
	now := m.clk.Now()
	r := &m.rate
	r.mu.Lock()
	defer r.mu.Unlock()
	from := now.Add(-per)
	i := 0
	for i < len(r.starts) && !r.starts[i].After(from) {
		i++
	}
	r.starts = append(r.starts[:0], r.starts[i:]...)
	if len(r.starts) < n {
		r.starts = append(r.starts, now)
		return true, 0, nil
	}
	// The start that leaves the window first frees one.
	return false, r.starts[len(r.starts)-n].Add(per).Sub(now), nil
}
