package main

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/goleak"
)

// goleak proves that stopping the pipeline mid-stream leaves no goroutine
// of any stage behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPipelineStopsEveryStage(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run() = %v", err)
	}
	const want = `wrote 100 records in order (last digest c00d7c66...)
read stopped because: operator stopped the pipeline
transform+write stopped because: operator stopped the pipeline
Run returned after every stage returned: operator stopped the pipeline
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
