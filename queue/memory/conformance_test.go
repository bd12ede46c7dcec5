package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
	"github.com/corral-go/corral/queue/queuetest"
)

func TestMemoryConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) driver.Backend { return memory.New() }, queuetest.Capabilities{})
}

// The suite's real-time mode, which broker backends use, run against the
// in-memory backend so that the mode itself is tested. Its unit, 50ms, gives
// the real-time bounds (a periodic tick enqueued within 5 units, none
// skipped) room for a goroutine held off a core for a few hundred
// milliseconds, as on a loaded two-core machine under -race; at 20ms a run
// at load 7-14 saw PeriodicOnce fail once.
func TestMemoryConformanceRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	queuetest.Run(t, func(t *testing.T) driver.Backend { return memory.New() },
		queuetest.Capabilities{RealTime: true, Unit: 50 * time.Millisecond})
}

// bytesOnly hides the in-memory backend's value passing, so the queue
// encodes payloads with its codec as it does for a broker backend; it keeps
// the operator's verbs.
type bytesOnly struct {
	driver.Backend
	driver.Admin
}

// TakeStart passes the rate limit on (driver.RateLimiter is not hidden).
func (b bytesOnly) TakeStart(ctx context.Context, n int, per time.Duration) (bool, time.Duration, error) {
	return b.Backend.(driver.RateLimiter).TakeStart(ctx, n, per)
}

func TestMemoryConformanceEncoded(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) driver.Backend { m := memory.New(); return bytesOnly{m, m} }, queuetest.Capabilities{})
}
