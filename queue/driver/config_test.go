package driver_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A Config no queue can honour is refused with the field at fault by a
// Backend opened directly. (queue.New never sees one: the options that
// would set it panic, see TestOptionsPanicOnImpossibleSettings.)
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  driver.Config
		want string
	}{
		{driver.Config{Capacity: -1}, "queue: negative capacity -1"},
		{driver.Config{DedupHorizon: -time.Second}, "queue: negative dedup horizon -1s"},
		{driver.Config{DeadLetterLimit: -2}, "queue: negative dead-letter limit -2"},
		{driver.Config{Overflow: driver.DropOldest + 1}, "queue: unknown overflow policy 4"},
		{driver.Config{Overflow: -1}, "queue: unknown overflow policy -1"},
	} {
		if err := tc.cfg.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v.Validate() = %v, want %q", tc.cfg, err, tc.want)
		}
		if err := memory.New().Open(context.Background(), tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("memory Open(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	ok := driver.Config{Capacity: 10, Overflow: driver.DropOldest, DedupHorizon: time.Minute}
	if err := ok.Validate(); err != nil {
		t.Errorf("%+v.Validate() = %v, want nil", ok, err)
	}
}

// WithDefaults fills in the settings whose zero means a default, and only
// those, so that two Configs compare setting by setting.
func TestConfigWithDefaults(t *testing.T) {
	c := driver.Config{Capacity: 3, Overflow: driver.Reject}
	want := driver.Config{Capacity: 3, Overflow: driver.Reject, DeadLetterLimit: driver.DefaultDeadLetterLimit}
	if got := c.WithDefaults(); got != want {
		t.Errorf("WithDefaults() = %+v, want %+v", got, want)
	}
	c.DeadLetterLimit = 5
	if got := c.WithDefaults(); got != c {
		t.Errorf("WithDefaults() of a set limit = %+v, want it unchanged", got)
	}
}

func TestOverflowString(t *testing.T) {
	for o, want := range map[driver.Overflow]string{driver.Block: "block", driver.Reject: "reject",
		driver.DropNewest: "drop-newest", driver.DropOldest: "drop-oldest", 9: "Overflow(9)"} {
		if got := o.String(); got != want {
			t.Errorf("Overflow(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}

// Refusal is the error of the policies that refuse a job at capacity, and
// nil for those that make room.
func TestOverflowRefusal(t *testing.T) {
	for _, tc := range []struct {
		o    driver.Overflow
		want error
	}{
		{driver.Block, nil},
		{driver.Reject, driver.ErrFull},
		{driver.DropNewest, driver.ErrDropped},
		{driver.DropOldest, nil},
		{driver.Overflow(9), nil},
	} {
		if got := tc.o.Refusal(); got != tc.want {
			t.Errorf("%v.Refusal() = %v, want %v", tc.o, got, tc.want)
		}
	}
}
