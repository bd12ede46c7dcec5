package redis_test

import (
	"testing"

	"github.com/corral-go/corral/queue/queuetest"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// TestFaults runs the fault suite against one redis-server with appendonly yes, once with
// appendfsync always and once with everysec: worker processes killed, a poison job that exits its process, the
// server SIGKILLed and restarted on its directory (every acknowledged enqueue and ack must
// survive), the server paused, and shared settings.
func TestFaults(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			srv := redistest.Start(t, fsync)
			queuetest.RunFaults(t, queuetest.Faults{
				Broker: broker{srv}, Open: openFaultBackend, CallTimeout: faultCallTimeout,
			})
		})
	}
}
