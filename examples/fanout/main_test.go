package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFanout(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run() = %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	// Every fault of the API is fixed per organisation, so everything but
	// the timings is exact: 10 transient 503s and 5 timeouts cost one retry
	// each, the 4 broken organisations use all 3 attempts, 404 none.
	patterns := []string{
		`^fetched 100 organisations in \S+: 95 ok \(190 users\), 5 failed$`,
		`^API calls: 123 for 100 organisations \(retries bounded by attempts and budget\)$`,
		`^  failed: org 7: gave up after 3 attempts, last error HTTP 500$`,
		`^  failed: org 32: gave up after 3 attempts, last error HTTP 500$`,
		`^  failed: org 57: gave up after 3 attempts, last error HTTP 500$`,
		`^  failed: org 82: gave up after 3 attempts, last error HTTP 500$`,
		`^  failed: org 99: not retried \(permanent\), last error HTTP 404$`,
		`^latency per organisation: p50 \S+, p95 \S+, max \S+$`,
	}
	if len(lines) != len(patterns) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(patterns), out.String())
	}
	for i, p := range patterns {
		if !regexp.MustCompile(p).MatchString(lines[i]) {
			t.Errorf("line %d = %q; want match for %s", i+1, lines[i], p)
		}
	}
}
