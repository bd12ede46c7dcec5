package health_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/health"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Each outcome moves the State as the contract says: a failure is kept,
// ErrUnavailable makes the backend unreachable until the next answer, and
// the end of the caller's ctx is not recorded. Only the observations that
// change Reachable report a change.
func TestObserve(t *testing.T) {
	var tr health.Tracker
	t0 := time.Now()
	tr.Init(t0)
	bg := context.Background()
	ended, cancel := context.WithCancelCause(bg)
	errStop := errors.New("stop")
	cancel(errStop)
	errBroken := errors.New("broken")
	unavailable := fmt.Errorf("dial: %w", driver.ErrUnavailable)
	steps := []struct {
		ctx       context.Context
		err       error
		changed   bool
		reachable bool
		lastError error
	}{
		{bg, nil, false, true, nil},
		{bg, driver.ErrDuplicate, false, true, nil},
		{ended, errStop, false, true, nil},
		{bg, errBroken, false, true, errBroken},
		{bg, unavailable, true, false, unavailable},
		{bg, unavailable, false, false, unavailable},
		{ended, fmt.Errorf("wrapped: %w", errStop), false, false, unavailable},
		{bg, driver.ErrFull, true, true, unavailable},
		{bg, nil, false, true, unavailable},
	}
	for i, st := range steps {
		quiet := tr.Quiet(st.err)
		s, changed := tr.Observe(st.ctx, st.err)
		if changed != st.changed {
			t.Errorf("step %d (%v): changed %v, want %v", i, st.err, changed, st.changed)
		}
		if quiet && changed {
			t.Errorf("step %d: Quiet, yet Observe changed the state", i)
		}
		got := tr.State()
		if changed && s != got {
			t.Errorf("step %d: Observe reported %+v, State is %+v", i, s, got)
		}
		if got.Reachable != st.reachable || got.LastError != st.lastError {
			t.Errorf("step %d (%v): reachable %v, last error %v; want %v, %v", i, st.err, got.Reachable, got.LastError, st.reachable, st.lastError)
		}
		if changed && got.Since.Before(t0) {
			t.Errorf("step %d: Since %v before Init's %v", i, got.Since, t0)
		}
	}
	tr.SetPaused(true)
	if s := tr.State(); !s.Paused {
		t.Errorf("after SetPaused(true): %+v", s)
	}
}
