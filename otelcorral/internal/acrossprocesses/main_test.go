// Package acrossprocesses_test holds otelcorral's test of a trace that crosses processes over
// each broker backend. It is a module of its own, which nobody imports, so that otelcorral's
// go.mod does not name the backends and their clients for its users.
package acrossprocesses_test

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	serveWorker() // exits if this process is a worker of TestTraceAcrossProcesses
	goleak.VerifyTestMain(m)
}

// attr returns the value of the span's attribute k, "" if it has none.
func attr(s sdktrace.ReadOnlySpan, k string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == k {
			return a.Value.String()
		}
	}
	return ""
}
