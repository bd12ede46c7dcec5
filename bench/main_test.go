package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// Every benchmark must leave nothing running: a goroutine that outlives its benchmark would
// skew the ones after it. ants starts a package-level default pool when it is imported; its two
// housekeeping goroutines live as long as the process, whatever the benchmarks do.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}
