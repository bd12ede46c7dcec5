package redis_test

import (
	"testing"
	"time"

	"github.com/corral-go/corral/queue/queuetest"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// TestFaults runs the fault suite against one redis-server with appendonly yes, once with
// appendfsync always and once with everysec: worker processes killed, a poison job that exits
// its process, the server SIGKILLed and restarted on its directory, the server paused, and
// shared settings. With always, every acknowledged enqueue and ack must survive the kill.
// With everysec, Redis may reply before it writes the file, for up to two seconds while an
// fsync runs (see TestDurabilityAfterKill): the suite is told so (Faults.LostWrites), and the
// acks of those seconds may be lost, their jobs handled again.
//
// The recovery bound of a single server, from the server answering again (restarted, or
// continued) to the next ack, is the one the package doc states: two call timeouts, the
// queue's longest receive backoff (5s) and a second, singleServerRecovery with the suite's
// call timeout. Measured (BrokerCrash and BrokerPause, 2s call timeout, a loaded 2-core
// machine, 18 runs of each with appendfsync always and everysec): 0-91ms after a restart,
// 7-363ms after a continue; the independent runs saw 1.26s at most.
func TestFaults(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			srv := redistest.Start(t, fsync)
			f := queuetest.Faults{Broker: broker{srv}, Open: openFaultBackend, CallTimeout: faultCallTimeout}
			if f.RecoveryBound() != singleServerRecovery {
				t.Fatalf("the suite holds a single server to %v, the package doc states %v", f.RecoveryBound(), singleServerRecovery)
			}
			if fsync == "everysec" {
				f.LostWrites = 2 * time.Second
			}
			queuetest.RunFaults(t, f)
		})
	}
}

// singleServerRecovery is the recovery bound the package doc states for a single server, with
// the fault suite's call timeout: two call timeouts, the longest receive backoff and a second.
const singleServerRecovery = 2*faultCallTimeout + 5*time.Second + time.Second

// TestFaultsReplicatedCluster runs the fault suite against a Redis Cluster of three masters,
// each with two replicas, with backends that wait for one replica after every write
// (WithReplicas(1, 1s)): the queue's master SIGKILLed and failed over to a replica by the
// cluster (Failover), a master SIGKILLed and restarted, which comes back as a replica
// (BrokerCrash), the queue's master paused and continued (BrokerPause), and the worker
// scenarios, all with the suite's exact accounting: nothing acknowledged is lost. Two
// replicas, so that a new master still has one to wait for (with one, every write fails until
// the old master is back: TestFailoverLastReplica). The node timeout, 8s, is longer than the
// suite's pause (three call timeouts, 6s), so that BrokerPause is a pause: with 2s the
// cluster failed the paused master over, the workers finished every job on the new one
// before the continue, and the scenario waited for an ack that could not come.
//
// The election bound is Redis Cluster's, for an election that fails once: a node timeout
// until the master is suspected, a failed election, four node timeouts until the replica
// tries again (Redis's failover_auth_retry_time), and one more for the suspicion to spread
// and the second election. Only the killed master's replica 0 stands (StartReplicatedCluster):
// with both standing, CI saw their elections split the two surviving masters' votes, once
// (the first ack 46.4s after the kill) and, in another test, for two minutes.
func TestFaultsReplicatedCluster(t *testing.T) {
	const nodeTimeout = 8 * time.Second
	queuetest.RunFaults(t, queuetest.Faults{
		Broker: clusterBroker{redistest.StartReplicatedCluster(t, 3, 2, nodeTimeout)}, Open: openFaultBackend,
		CallTimeout: faultCallTimeout, Election: 6 * nodeTimeout,
	})
}
