package main

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestJobs pins the whole story: every count and every attempt of every
// dead letter is deterministic.
func TestJobs(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run() = %v", err)
	}
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

const want = `enqueued 6 invoices; sending invoice-6 again: queue: duplicate job id
every invoice acked or dead-lettered:
  totals: enqueued=6 duplicates=1 acked=4 retries=5 dead-lettered=2 (attempts=1 permanent=1)
  stored now: ready=0 in-flight=0 delayed=0 dead-letters=2
dead letters:
  invoice-4 (1,250.00): reason attempts after 4 attempt(s)
    attempt 1: parse amount: strconv.ParseFloat: parsing "1,250.00": invalid syntax
    attempt 2: parse amount: strconv.ParseFloat: parsing "1,250.00": invalid syntax
    attempt 3: parse amount: strconv.ParseFloat: parsing "1,250.00": invalid syntax
    attempt 4: parse amount: strconv.ParseFloat: parsing "1,250.00": invalid syntax
  invoice-5 (10.00): reason permanent after 1 attempt(s)
    attempt 1: no customer: nothing to retry
after the fix: invoice-4 redriven (and acked), invoice-5 purged (its dead letter deleted, still counted in the totals):
  totals: enqueued=7 duplicates=1 acked=5 retries=5 dead-lettered=2 (attempts=1 permanent=1)
  stored now: ready=0 in-flight=0 delayed=0 dead-letters=0
consumer drained and closed: 0 of the 5 acks happened during the drain (its report: acked=0 returned=0 dead-lettered=0 abandoned=0)
`
