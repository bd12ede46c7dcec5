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

// TestFaultsReplicatedCluster runs the fault suite against a Redis Cluster of three masters,
// each with two replicas, with backends that wait for one replica after every write
// (WithReplicas(1, 1s)): the queue's master SIGKILLed and failed over to a replica by the
// cluster (Failover), a master SIGKILLed and restarted, which comes back as a replica
// (BrokerCrash), the queue's master paused beyond the node timeout, which fails it over too
// (BrokerPause), and the worker scenarios, all with the suite's exact accounting: nothing
// acknowledged is lost. Two replicas, so that a new master still has one to wait for (with
// one, every write fails until the old master is back: TestFailoverLastReplica). The
// election bound is five node timeouts: failovers took 3.6-3.9s from the kill with a 2s node
// timeout.
func TestFaultsReplicatedCluster(t *testing.T) {
	queuetest.RunFaults(t, queuetest.Faults{
		Broker: clusterBroker{redistest.StartReplicatedCluster(t, 3, 2)}, Open: openFaultBackend,
		CallTimeout: faultCallTimeout, Election: 5 * redistest.NodeTimeout,
	})
}
