package jetstream

import (
	"slices"
	"testing"
	"time"
)

// The backend's pauses, by the formulas they had before they were backoff schedules: Block's
// polls min(1ms·2^n, 50ms), an ordering key's hand-back delays min(5ms<<min(n, 5), 100ms) by
// the count of deliveries n, and retried's pauses after a raced creation min(try, 10)·20ms.
func TestDelays(t *testing.T) {
	ms := time.Millisecond
	if got, want := blockPolls.Delays(9), []time.Duration{1 * ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms, 32 * ms, 50 * ms, 50 * ms, 50 * ms}; !slices.Equal(got, want) {
		t.Errorf("Block polls %v; want %v", got, want)
	}
	for n := range 12 {
		if got, want := keyBusyDelays.Delay(n, 0), min(5*ms<<min(n, 5), 100*ms); got != want {
			t.Errorf("hand-back delay after %d deliveries %v; want %v", n, got, want)
		}
	}
	for try := 1; try <= 14; try++ {
		if got, want := racePauses.Delay(try-1, 0), time.Duration(min(try, 10))*20*ms; got != want {
			t.Errorf("pause after try %d %v; want %v", try, got, want)
		}
	}
}
