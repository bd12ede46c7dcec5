package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
)

// A Config no queue can honour is refused with the field at fault by a
// Backend opened directly. (New never sees one: the options that would set
// it panic, see TestOptionsPanicOnImpossibleSettings.)
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  queue.Config
		want string
	}{
		{queue.Config{Capacity: -1}, "queue: negative capacity -1"},
		{queue.Config{DedupHorizon: -time.Second}, "queue: negative dedup horizon -1s"},
		{queue.Config{Overflow: queue.DropOldest + 1}, "queue: unknown overflow policy 4"},
		{queue.Config{Overflow: -1}, "queue: unknown overflow policy -1"},
	} {
		if err := tc.cfg.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v.Validate() = %v, want %q", tc.cfg, err, tc.want)
		}
		if err := queue.NewMemory().Open(context.Background(), tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("Memory.Open(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	ok := queue.Config{Capacity: 10, Overflow: queue.DropOldest, DedupHorizon: time.Minute}
	if err := ok.Validate(); err != nil {
		t.Errorf("%+v.Validate() = %v, want nil", ok, err)
	}
}
