package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the example (on its embedded server) and checks what
// it reports: every order settled, customers' orders in order, the duplicate refused, the retry
// and the attempt after it, the one dead letter before its purge, and the queue empty after.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run("", &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"producer: enqueued 30 orders for 3 customers\n",
		"producer: enqueue customer-0/order-03 again: queue: duplicate job id\n",
		"workers: each customer's orders handled in order: true\n",
		"retry: customer-1/order-04 attempt 1 failed (payment service timed out), retried after 50ms\n" +
			"retry: then customer-1/order-04 attempt 2 succeeded\n",
		"stats: ready 0, in flight 0, delayed 0, dead letters 1\n" +
			"dead letter: customer-2/order-07 (permanent after 1 attempt): card declined\n" +
			"purged dead letter customer-2/order-07\n" +
			"stats after the purge: ready 0, in flight 0, delayed 0, dead letters 0\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	m := regexp.MustCompile(`workers: (\d+) orders handled \(worker-1: (\d+), worker-2: (\d+)\)`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no workers line in:\n%s", got)
	}
	n, _ := strconv.Atoi(m[1])
	w1, _ := strconv.Atoi(m[2])
	w2, _ := strconv.Atoi(m[3])
	if n != 29 || w1+w2 != n {
		t.Errorf("handled %d (%d + %d), want 29 (30 orders, one dead-lettered)", n, w1, w2)
	}
}
