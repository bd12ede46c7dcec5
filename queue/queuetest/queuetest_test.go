package queuetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
	"github.com/corral-go/corral/queue/queuetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The suite itself runs against memory.New in package memory
// (conformance_test.go); these tests check that it catches broken backends.

// broken is a backend with one deliberate defect.
type broken struct {
	driver.Backend
	defect string
}

func (b broken) Enqueue(ctx context.Context, m driver.Message) (driver.EnqueueResult, error) {
	res, err := b.Backend.Enqueue(ctx, b.enqueueDefect(m))
	switch {
	case b.defect == "duplicates" && errors.Is(err, queue.ErrDuplicate):
		err = nil // pretends to store it
	case b.defect == "silent-eviction":
		res.Evicted = nil
	}
	return res, err
}

// enqueueDefect applies the defects that change the message enqueued.
func (b broken) enqueueDefect(m driver.Message) driver.Message {
	if b.defect == "no-unique" {
		m.Unique = ""
	}
	return m
}

func (b broken) TakeStart(ctx context.Context, n int, per time.Duration) (bool, time.Duration, error) {
	if b.defect == "no-rate-limit" {
		return true, 0, nil
	}
	return b.Backend.(driver.RateLimiter).TakeStart(ctx, n, per)
}

func (b broken) Nack(ctx context.Context, d *driver.Delivery, delay time.Duration, a queue.Attempt) error {
	switch b.defect {
	case "no-delay":
		delay = 0
	case "snooze-spends":
		a.Snoozed = false
	}
	return b.Backend.Nack(ctx, d, delay, a)
}

func (b broken) Bury(ctx context.Context, d *driver.Delivery, r queue.Reason, a queue.Attempt) (driver.BuryResult, error) {
	switch {
	case b.defect == "no-history":
		a = queue.Attempt{}
	case b.defect == "entry-without-run" && a == (queue.Attempt{}):
		a = queue.Attempt{Number: d.Attempt, Error: "exhausted"} // the entry the contract forbids
	}
	return b.Backend.Bury(ctx, d, r, a)
}

func (b broken) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	if b.defect == "no-lease-expiry" {
		lease = 1000 * time.Hour
	}
	return b.Backend.Receive(ctx, lease, d)
}

// TestBroken runs the suite on a broken backend; it is meant to fail, and
// runs only in the child process of TestSuiteCatchesDefects.
func TestBroken(t *testing.T) {
	defect := os.Getenv("QUEUETEST_DEFECT")
	if defect == "" {
		t.Skip("run by TestSuiteCatchesDefects")
	}
	queuetest.Run(t, func(t *testing.T) driver.Backend { return broken{memory.New(), defect} }, queuetest.Capabilities{})
}

// The suite must fail a backend with any of these defects, in the subtest
// that covers it.
func TestSuiteCatchesDefects(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	for defect, subtest := range map[string]string{
		"duplicates":      "DedupWhileStored",
		"silent-eviction": "OverflowDropOldest",
		"no-delay":        "RetrySchedule",
		"no-history":      "MaxAttemptsToDeadLetters",
		"no-lease-expiry": "BackendLeaseExpiry",
		// A backend that records an entry for a job buried without a run, its attempts spent.
		"entry-without-run": "AttemptsAreRuns",
		"snooze-spends":     "Snooze",
		"no-unique":         "UniqueFor",
		"no-rate-limit":     "RateLimit",
	} {
		t.Run(defect, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBroken$", "-test.v")
			cmd.Env = append(os.Environ(), "QUEUETEST_DEFECT="+defect)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a backend with defect %q:\n%s", defect, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestBroken/"+subtest+" ") {
				t.Errorf("defect %q did not fail subtest %s:\n%s", defect, subtest, out)
			}
		})
	}
}
