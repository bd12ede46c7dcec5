package queuetest

import (
	"os"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// Broker is the fault layer's hold on the servers a backend talks to: real server processes
// that the backend's test started on loopback (one, or a cluster), which the suite kills,
// restarts, pauses and continues. Node numbers are 0 to Nodes()-1.
type Broker interface {
	// Nodes returns the number of servers.
	Nodes() int
	// Addr returns what OpenFunc needs to reach the servers (all of them, for a cluster),
	// passed as is to the worker processes.
	Addr() string
	// Kill ends node with SIGKILL, leaving its store as it was.
	Kill(t testing.TB, node int)
	// Restart starts a killed node again on its store, and returns once it serves.
	Restart(t testing.TB, node int)
	// Pause stops node with SIGSTOP.
	Pause(t testing.TB, node int)
	// Continue resumes a paused node with SIGCONT.
	Continue(t testing.TB, node int)
	// Leader returns the node that leads the data of the queue called name, whose loss is a
	// failover, or -1 when there is none to fail over (a single server).
	Leader(t testing.TB, name string) int
}

// A Describer is a Broker that can describe what it stores for the queue called name: a
// scenario that times out prints it, to tell a job the broker holds but does not deliver from
// one a worker holds.
type Describer interface {
	Describe(name string) string
}

// OpenFunc returns a new, unopened backend for the queue called name on the servers at addr
// (see Broker.Addr), and a function that releases it. The suite calls it in the test's
// process and, through ServeWorker, in worker processes.
type OpenFunc func(addr, name string) (b driver.Backend, release func(), err error)

// Faults is what RunFaults needs from a backend's test.
type Faults struct {
	// Broker holds the servers the backend's test started.
	Broker Broker
	// Open opens a backend on them, in the test's process and in worker processes.
	Open OpenFunc
	// CallTimeout is the backend's deadline for one request to the broker: the time a worker
	// may wait for an answer lost with a server.
	CallTimeout time.Duration
	// Election bounds how long the broker takes to elect a new leader once one was killed
	// (zero for a single server).
	Election time.Duration
	// Prefetch is how many jobs a backend may hold for its process beyond the ones its
	// handlers run: with the running ones, the jobs a fault can make the broker deliver
	// again.
	Prefetch int
	// LostWrites is how long before a SIGKILL a single server may lose writes it had
	// acknowledged (zero for one that writes them before it replies; 2s for Redis with
	// appendfsync everysec, which postpones its writes while an fsync runs). BrokerCrash
	// then starts its workers only once the last enqueue is LostWrites old, so that every
	// accepted job is stored before the first kill, and counts the jobs acked within
	// LostWrites before a kill (give or take a call timeout) among the ones it may see
	// handled twice: an ack lost delivers its job again.
	LostWrites time.Duration
}

// inHand is how many jobs one worker process can hold at a fault: its handlers' and its
// backend's prefetch. A fault makes at most these be handled twice, per process it touches.
func (f Faults) inHand() int { return faultWorkers + f.Prefetch }

// The size of the fault scenarios: CI's by default, the full one with CORRAL_FAULTS=full.
type faultSize struct {
	jobs    int           // jobs per scenario
	crashes int           // broker crashes in the crash scenario
	limit   time.Duration // bound of one scenario
}

func sizeFromEnv() faultSize {
	if os.Getenv("CORRAL_FAULTS") == "full" {
		return faultSize{jobs: 2000, crashes: 3, limit: 6 * time.Minute}
	}
	return faultSize{jobs: 300, crashes: 2, limit: 3 * time.Minute}
}

// The consumers of the worker processes.
const (
	faultWorkers     = 4               // handlers per worker process
	faultLease       = 2 * time.Second // the handlers' lease
	faultMaxAttempts = 3
	faultHorizon     = 10 * time.Minute
)

// RecoveryBound is the bound RunFaults holds a backend to after a fault (a broker restarted
// or continued, a leader killed): new jobs are acked again within the broker's election time,
// two call timeouts (a request lost with the server, then a retry of the consumer), the
// consumer's receive backoff at its longest (5s) and a second of heartbeat. Jobs that were in
// flight come back at the end of their lease (1.5 times the handler's lease) on top.
func (f Faults) RecoveryBound() time.Duration {
	return f.Election + 2*f.CallTimeout + 5*time.Second + time.Second
}

// RunFaults runs the fault scenarios against real broker processes, each as a subtest, and
// checks exact accounting: every accepted job ends acked or dead-lettered, never both and
// never neither (acked by a worker's report, or handled by a worker killed before it could
// report the ack), nothing is left stored, the dead letters are exactly the poison jobs, every
// attempt number is a handler run (no job's attempt exceeds the handler starts seen for it,
// beyond the starts a kill may have hidden, and in a pause, for a backend that starts jobs as
// it receives them, the receives abandoned at their deadline that the server ran when it
// continued), duplicate handlings are counted and bounded by the
// jobs that can be in flight at each fault, no ordering key is left stuck, and the time to
// recover from each fault is measured and held to f.RecoveryBound(). Its log lines starting
// with "FAULTS" give the numbers; with CORRAL_FAULTS_DEBUG set in the environment, they also
// give the events of every job handled twice and the worker processes' standard error.
//
// The scenarios: WorkerKilled (SIGKILL of one of three worker processes), PoisonProcess (a
// job whose handler exits its process, every time), BrokerCrash (SIGKILL and restart of a
// server, over and over), BrokerPause (SIGSTOP of a server for longer than the call timeout,
// then SIGCONT), Failover (SIGKILL of the queue's leader, with three nodes or more),
// SharedSettings (a second process opening the queue with other settings is refused), and
// PeriodicKilled (of three processes running one schedule, the one that enqueued the last
// tick is killed with SIGKILL: the next ticks are enqueued once, within PeriodicBound).
//
// The worker processes are the test binary run again: the test's TestMain must call
// ServeWorker first.
func RunFaults(t *testing.T, f Faults) {
	if f.CallTimeout <= 0 {
		t.Fatal("queuetest: Faults.CallTimeout must be set")
	}
	size := sizeFromEnv()
	t.Run("WorkerKilled", func(t *testing.T) { faultWorkerKilled(newFaultRun(t, f, size)) })
	t.Run("PoisonProcess", func(t *testing.T) { faultPoison(newFaultRun(t, f, size)) })
	t.Run("BrokerCrash", func(t *testing.T) { faultBrokerCrash(newFaultRun(t, f, size)) })
	t.Run("BrokerPause", func(t *testing.T) { faultBrokerPause(newFaultRun(t, f, size)) })
	if f.Broker.Nodes() >= 3 {
		t.Run("Failover", func(t *testing.T) { faultFailover(newFaultRun(t, f, size)) })
	}
	t.Run("SharedSettings", func(t *testing.T) { faultSharedSettings(t, f) })
	t.Run("PeriodicKilled", func(t *testing.T) { faultPeriodicKilled(newFaultRun(t, f, size)) })
}
