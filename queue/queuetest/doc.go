// Package queuetest is the conformance suite for queue backends. Every
// [driver.Backend] must pass [Run]: the in-memory backend does in package
// queue, broker backends do in their own tests.
//
// Run drives a real queue.Queue and queue.Consumer over the backend and
// checks, each in its own subtest: acking, delayed jobs, the retry schedule
// (exact under synctest), max attempts, permanent errors and panics to the
// dead letters with their history, deduplication while stored and within the
// horizon, ordering keys under failure and keys in parallel, each overflow
// policy, lease expiry and redelivery (never in flight twice), start-by
// expiry, redrive and purge, job headers kept through retries, releases,
// dead letters and redrives, the operator's verbs of a backend that
// implements driver.Admin (listing and counting with filters and a cursor
// that stays valid while jobs move, inspect, cancel of a waiting and of a
// running job, pause and resume, the bulk verbs), the shutdown report at
// drain and at deadline
// with the jobs left for the next consumer, the accounting identity (every
// job acked or dead-lettered exactly once), the stats gauges, and Close: the
// queue's (which closes its consumers and the backend) and the backend's
// (which refuses Enqueue and Receive with ErrClosed and ends a waiting
// Receive); and jobs in time: snoozes (no attempt spent, counted, in the
// history), periodic jobs (three runners of a schedule, each tick stored
// once), unique keys held for their period, and the rate limit of two
// consumers together (driver.RateLimiter).
//
// RunAdminAcrossProcesses checks, on two backends of one queue as two processes open it, that
// a cancel and a pause from one reach the consumer of the other.
//
// RunZeroBackend checks that every exported method of a backend's zero value panics at once,
// whatever its arguments, saying what to use, for a backend whose zero value is not usable.
//
// A backend that keeps its state in process runs the suite on the virtual
// clock of testing/synctest; one that talks to a broker declares RealTime,
// and the suite then uses real time, scaled by Unit, and lower bounds.
//
//	func TestConformance(t *testing.T) {
//		queuetest.Run(t, func(t *testing.T) driver.Backend { return mybackend.New(...) },
//			queuetest.Capabilities{RealTime: true})
//	}
package queuetest

// Where things are: queuetest.go holds Run and Capabilities, env.go a subtest's world and
// its helpers; the conformance tests, by concept: accounting.go (acks, the accounting
// identity, stats), delays.go (delays, the retry schedule, start-by), deadletters.go,
// dedup.go, keys.go (ordering keys), headers.go (job headers), admin.go and admin_procs.go
// (the operator's verbs, and across processes), overflow.go, lease.go and close.go
// (shutdown and Close), snooze.go, periodic.go, unique.go and ratelimit.go (jobs in time),
// attempts.go (attempts are handler runs), versions.go (payload versions, Release's delay),
// zero.go (RunZeroBackend).
// The fault suite: faults.go holds Faults, Broker and RunFaults; faults_worker.go the worker
// processes (ServeWorker's side, and the run's: start, stop, kill); faults_run.go a scenario's
// run (producing, waiting, the events reported); faults_check.go its accounting check and
// report; faults_scenarios.go the scenarios; faults_periodic.go PeriodicKilled.
