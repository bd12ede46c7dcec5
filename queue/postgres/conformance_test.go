package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
	"github.com/corral-go/corral/queue/queuetest"
)

// TestConformance runs queuetest's suite, every capability, against a throwaway server: each
// subtest has a queue of its own on one pool.
func TestConformance(t *testing.T) {
	pool := db(t)
	queuetest.Run(t, func(t *testing.T) driver.Backend {
		b := postgres.New(pool, queueName(t), postgres.WithPollInterval(time.Second))
		t.Cleanup(func() { _ = b.Close(context.Background()) })
		return b
	}, queuetest.Capabilities{RealTime: true, Unit: 50 * time.Millisecond})
}
