package main

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTour pins the tour's whole output: every step is deterministic, so a
// change in any package's behaviour shows up here as a diff.
func TestTour(t *testing.T) {
	var out bytes.Buffer
	if err := tour(context.Background(), &out); err != nil {
		t.Fatalf("tour() = %v", err)
	}
	if got := out.String(); got != want {
		t.Errorf("tour output:\n%s\nwant:\n%s", got, want)
	}
}

const want = `== scope: tasks cannot outlive their owner
Run returned: scope: task "inventory" failed: inventory service down
pricing was cancelled because: scope: task "inventory" failed: inventory service down
errors.Is(err, errDown) = true

== pool: 2 workers, a queue of 2, Reject when full
submitted 6 blocking tasks: 4 accepted, 2 rejected with "pool: queue full"
after Close: completed=4 rejected=2 workers=0

== backoff: exponential, base 100ms, factor 2, cap 1s
first 6 delays: [100ms 200ms 400ms 800ms 1s 1s]
attempt 10,000: 1s (no overflow)

== retry: bounded, classified, and honest about why it gave up
flaky operation: err=<nil> after 3 calls
permanent failure: stopped after 1 call; errors.Is(err, retry.ErrPermanent) = true

== queue: ack, retry, dead letters
enqueued=5 acked=4 retried=2 dead=1
dead letter poison-1: reason=attempts after 3 attempts, last error "cannot parse \"poison\""

`
