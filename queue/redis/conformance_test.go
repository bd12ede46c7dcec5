package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/queuetest"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// TestConformance runs queuetest's suite, every capability, against a throwaway server: each
// subtest has a queue of its own on one client.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := newClient(t, srv.Addr())
	queuetest.Run(t, func(t *testing.T) driver.Backend {
		b := redis.New(c, queueName(t), redis.WithPollInterval(20*time.Millisecond))
		t.Cleanup(func() { _ = b.Close(context.Background()) })
		return b
	}, queuetest.Capabilities{RealTime: true, Unit: 50 * time.Millisecond})
}
