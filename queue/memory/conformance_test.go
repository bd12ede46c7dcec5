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
// in-memory backend so that the mode itself is tested.
func TestMemoryConformanceRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	queuetest.Run(t, func(t *testing.T) driver.Backend { return memory.New() },
		queuetest.Capabilities{RealTime: true, Unit: 20 * time.Millisecond})
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
