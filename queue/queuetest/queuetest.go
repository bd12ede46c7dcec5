package queuetest

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

// Capabilities declares what a backend can do, so that Run adapts or skips.
type Capabilities struct {
	// RealTime says the backend needs real time (a broker in another
	// process or on the network): the suite then runs without
	// testing/synctest, scales its durations by Unit, and asserts lower
	// bounds on delays instead of exact ones.
	RealTime bool
	// Unit is the time unit of the suite's schedules under RealTime
	// (default 100ms). Under synctest it is one second of virtual time.
	Unit time.Duration
	// Overflow lists the overflow policies the backend implements; nil
	// means all four.
	Overflow []queue.Overflow
	// ReleaseCountsAttempt says that Release cannot un-count a delivery
	// (JetStream's Nak counts it), so a job returned at shutdown comes back
	// with its attempt number increased.
	ReleaseCountsAttempt bool
	// PauseWithin is the backend's bound on how soon its consumers stop
	// starting jobs after a pause (driver.Admin.SetPaused), which the
	// admin subtests wait for; zero for a backend whose pause holds when
	// SetPaused returns.
	PauseWithin time.Duration
}

// Run runs the conformance suite as subtests of t. newBackend returns a new,
// empty, unopened backend; it is called once per subtest, inside the
// subtest's synctest bubble unless caps.RealTime.
func Run(t *testing.T, newBackend func(t *testing.T) driver.Backend, caps Capabilities) {
	if caps.Unit <= 0 {
		caps.Unit = 100 * time.Millisecond
	}
	s := suite{newBackend: newBackend, caps: caps}
	tests := []struct {
		name string
		f    func(*env)
	}{
		{"AckOnce", testAckOnce},
		{"DelayedJob", testDelayedJob},
		{"RetrySchedule", testRetrySchedule},
		{"MaxAttemptsToDeadLetters", testMaxAttempts},
		{"PermanentToDeadLetters", testPermanent},
		{"PanicToDeadLetters", testPanic},
		{"DedupWhileStored", testDedupWhileStored},
		{"DedupHorizon", testDedupHorizon},
		{"OrderingKeyUnderFailure", testOrderingKey},
		{"KeysRunInParallel", testKeysParallel},
		{"OverflowReject", testOverflowReject},
		{"OverflowDropNewest", testOverflowDropNewest},
		{"OverflowDropOldest", testOverflowDropOldest},
		{"OverflowBlock", testOverflowBlock},
		{"LeaseExpiryRedelivers", testLeaseExpiry},
		{"BackendLeaseExpiry", testBackendLeaseExpiry},
		{"UnstartedLeaseExpiry", testUnstartedLeaseExpiry},
		{"AttemptsAreRuns", testAttemptsAreRuns},
		{"DropOldestSparesLeased", testDropOldestSparesLeased},
		{"StartByExpired", testStartBy},
		{"StartByNotAfterRelease", testStartByAfterRelease},
		{"ReleaseDelay", testReleaseDelay},
		{"Snooze", testSnooze},
		{"PeriodicOnce", testPeriodicOnce},
		{"UniqueFor", testUniqueFor},
		{"RateLimit", testRateLimit},
		{"VersionRoundTrip", testVersionRoundTrip},
		{"HeaderRoundTrip", testHeaderRoundTrip},
		{"HeaderRelease", testHeaderRelease},
		{"RedriveAndPurge", testRedrive},
		{"DeadLetterIDReplaced", testDeadLetterIDReplaced},
		{"DeadLetterLimit", testDeadLetterLimit},
		{"ShutdownReportDrain", testShutdownDrain},
		{"ShutdownReportDeadline", testShutdownDeadline},
		{"AccountingIdentity", testAccounting},
		{"Stats", testStats},
		{"QueueClose", testQueueClose},
		{"BackendClose", testBackendClose},
		{"AdminList", testAdminList},
		{"AdminInspect", testAdminInspect},
		{"AdminInspectRetry", testAdminInspectRetry},
		{"AdminCancelRunning", testAdminCancelRunning},
		{"AdminPause", testAdminPause},
		{"AdminBulk", testAdminBulk},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { s.run(t, tc.f) })
	}
}

type suite struct {
	newBackend func(t *testing.T) driver.Backend
	caps       Capabilities
}

func (s suite) run(t *testing.T, f func(*env)) {
	if s.caps.RealTime {
		f(&env{T: t, s: s, unit: s.caps.Unit})
		return
	}
	synctest.Test(t, func(t *testing.T) {
		f(&env{T: t, s: s, unit: time.Second, virtual: true})
	})
}
