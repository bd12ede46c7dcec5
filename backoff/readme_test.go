package backoff_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/corral-go/corral/backoff"
)

// The README's backoff snippet, as written there.
func TestREADMESnippet(t *testing.T) {
	s := backoff.Exponential(100*time.Millisecond, 2, 10*time.Second,
		backoff.WithJitter(backoff.FullJitter)) // AWS formulas: Full, Equal, Decorrelated
	fmt.Println(s.Delays(5)) // the schedule, for docs and tests
	seq := s.Sequence()      // per-loop state, not shared
	d := seq.Next()
	check(t, d >= 0 && d <= 100*time.Millisecond, "first delay %v", d)
}
