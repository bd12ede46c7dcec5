package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun: every order handled once, customer-0's in enqueue order, the queue left empty, and
// the split between the two workers adds up.
func TestRun(t *testing.T) {
	t.Setenv("CORRAL_REDIS_ADDR", "") // a throwaway server
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("output:\n%s\nwant 4 lines", out.String())
	}
	var a, b int
	if _, err := fmt.Sscanf(lines[2], "split: worker-a %d, worker-b %d", &a, &b); err != nil || a+b != 12 {
		t.Errorf("split line %q: %v, want counts adding up to 12", lines[2], err)
	}
	want := "12 orders handled once each\ncustomer-0's orders in enqueue order: [0 10 11]\nleft in the queue: 0 ready, 0 in flight"
	if got := lines[0] + "\n" + lines[1] + "\n" + lines[3]; got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
