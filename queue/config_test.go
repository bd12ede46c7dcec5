package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
)

// A Config no queue can honour is refused with the field at fault, by New
// and by a Backend opened directly.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		opt  queue.Option
		cfg  queue.Config
		want string
	}{
		{queue.WithCapacity(-1), queue.Config{Capacity: -1}, "queue: negative capacity -1"},
		{queue.WithDedupHorizon(-time.Second), queue.Config{DedupHorizon: -time.Second}, "queue: negative dedup horizon -1s"},
		{queue.WithOverflow(queue.DropOldest + 1), queue.Config{Overflow: queue.DropOldest + 1}, "queue: unknown overflow policy 4"},
		{queue.WithOverflow(-1), queue.Config{Overflow: -1}, "queue: unknown overflow policy -1"},
	} {
		if err := tc.cfg.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v.Validate() = %v, want %q", tc.cfg, err, tc.want)
		}
		if _, err := queue.New[int](tc.opt); err == nil || err.Error() != tc.want {
			t.Errorf("New with %+v: %v, want %q", tc.cfg, err, tc.want)
		}
		if err := queue.NewMemory().Open(context.Background(), tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("Memory.Open(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := queue.New[int](queue.WithMaxWait(-time.Second)); err == nil || err.Error() != "queue: negative max wait -1s" {
		t.Errorf("New with a negative max wait: %v", err)
	}
	ok := queue.Config{Capacity: 10, Overflow: queue.DropOldest, DedupHorizon: time.Minute}
	if err := ok.Validate(); err != nil {
		t.Errorf("%+v.Validate() = %v, want nil", ok, err)
	}
}
