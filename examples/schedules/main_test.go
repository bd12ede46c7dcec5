package main

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSchedules pins the output: every line is deterministic.
func TestSchedules(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run() = %v", err)
	}
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

const want = `rollup tick handled once: true
rollup tick handled once: true
report handled at attempt 1 after 3 looks
second refresh of ada refused: true, the first's ID returned: true
snoozed=2 retried=0
partner: 6 calls, the i-th at least i/2 × 500ms after the first could start: true
local: 20 jobs of 40ms on both workers (within 700ms): true
`
