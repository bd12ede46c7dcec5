package main

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBackground(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run() = %v", err)
	}
	const want = `client got: order A-17 accepted
client hangs up while the receipt and analytics are in flight
handler returned after its follow-ups; scope error: context canceled
  analytics for A-17: cancelled (context canceled)
  receipt for A-17: cancelled (context canceled)
the receipt of an accepted order was cancelled with the request:
work that must survive the request belongs in a queue (see examples/jobs)
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
