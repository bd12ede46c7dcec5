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
stats: enqueued=6 duplicates=1 acked=4 retried=5 dead=2 (attempts=1 permanent=1) ready=0 in-flight=0
dead letters:
  invoice-4 (1,250.00): reason attempts after 4 attempt(s)
    attempt 1: parse amount: strconv.ParseFloat: parsing "1,250.00": invalid syntax
    attempt 2: parse amount: strconv.ParseFloat: parsing "1,250.00": invalid syntax
    attempt 3: parse amount: strconv.ParseFloat: parsing "1,250.00": invalid syntax
    attempt 4: parse amount: strconv.ParseFloat: parsing "1,250.00": invalid syntax
  invoice-5 (10.00): reason permanent after 1 attempt(s)
    attempt 1: no customer: nothing to retry
after the fix: invoice-4 redriven, invoice-5 purged
stats: enqueued=7 duplicates=1 acked=5 retried=5 dead=0 (attempts=1 permanent=1) ready=0 in-flight=0
consumer closed: {Acked:0 Returned:0 DeadLettered:0 Abandoned:0}, err=<nil>
`
