package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// TestReplicasShared pins that the replica count of WithReplicas is a shared setting: a
// process opening a queue with another count than the one recorded by the first fails at
// Open, naming the setting and both counts, either way round; the same count opens.
func TestReplicasShared(t *testing.T) {
	master := redistest.Start(t, "always")
	redistest.StartReplica(t, master)
	c := newClient(t, master.Addr())
	ctx := context.Background()
	open := func(name string, opts ...redis.Option) error {
		b := redis.New(c, name, opts...)
		t.Cleanup(func() { _ = b.Close(ctx) })
		return b.Open(ctx, driver.Config{})
	}
	// A wait long enough for a replica fsyncing every write on a loaded machine: this test is
	// about the setting, not how soon a replica confirms (CI once saw 0 of 1 within 1s).
	replicated := redis.WithReplicas(1, 30*time.Second)
	for _, tc := range []struct {
		first, second []redis.Option
		want          string
	}{
		{first: nil, second: []redis.Option{replicated}, want: "replicas 1 differs from the queue's 0"},
		{first: []redis.Option{replicated}, second: nil, want: "replicas 0 differs from the queue's 1"},
	} {
		name := queueName(t)
		if err := open(name, tc.first...); err != nil {
			t.Fatalf("first Open: %v", err)
		}
		if err := open(name, tc.first...); err != nil {
			t.Errorf("Open with the same settings: %v", err)
		}
		err := open(name, tc.second...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open with another replica count: %v, want an error containing %q", err, tc.want)
		}
	}
}
