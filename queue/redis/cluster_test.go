package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/queuetest"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// TestConformanceCluster runs queuetest's suite on a Redis Cluster of three masters through a
// ClusterClient: each subtest's queue lives in the slot of its {name} tag, on whichever master
// holds it, and every script runs there.
func TestConformanceCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs(), PoolSize: 100})
	t.Cleanup(func() { _ = c.Close() })
	queuetest.Run(t, func(t *testing.T) driver.Backend {
		b := redis.New(c, queueName(t), redis.WithPollInterval(20*time.Millisecond))
		t.Cleanup(func() { _ = b.Close(context.Background()) })
		return b
	}, queuetest.Capabilities{RealTime: true, Unit: 50 * time.Millisecond})
	// The subtests' queues (29 random names) landed on every master: the probability that
	// they all missed one is 3 * (2/3)^29, about 2e-5.
	for i, m := range cl.Masters {
		mc := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
		n, err := mc.DBSize(context.Background()).Result()
		_ = mc.Close()
		if err != nil || n == 0 {
			t.Errorf("master %d holds %d keys (%v): the queues did not spread over the cluster", i, n, err)
		}
		t.Logf("master %d: %d keys", i, n)
	}
}
