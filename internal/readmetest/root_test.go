package readmetest_test

import (
	"testing"

	"github.com/corral-go/corral/internal/readmetest"
)

// The root README's snippets are copied into the README tests of the core module's packages,
// and of examples/schedules for the cron schedule.
func TestRootREADME(t *testing.T) {
	readmetest.Check(t, "../../README.md",
		[]string{"../../scope/readme_test.go", "../../pool/readme_test.go", "../../backoff/readme_test.go",
			"../../retry/readme_test.go", "../../queue/readme_test.go", "../../examples/schedules/readme_test.go"},
		// errgroup's side of the comparison: the core module does not require golang.org/x/sync.
		"// golang.org/x/sync/errgroup",
		"g, ctx := errgroup.WithContext(ctx)",
		"g.SetLimit(2)",
		"g.Go(func() error { return fetch(ctx, url) })",
		"err := g.Wait() // the first error only",
	)
}
