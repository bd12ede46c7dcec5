package periodic_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/periodic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// every ticks at the multiples of d.
type every time.Duration

func (d every) Next(t time.Time) time.Time {
	return t.Truncate(time.Duration(d)).Add(time.Duration(d))
}

func TestCheckRefusesShortHorizonLongJitterEmptyName(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)
	ok := func(string) error { return nil }
	for _, c := range []struct {
		name            string
		horizon, jitter time.Duration
		want            string
	}{
		{"", 2 * time.Hour, 0, "empty name"},
		{"s", time.Hour, 0, "dedup horizon 1h0m0s is not longer"},
		{"s", 2 * time.Hour, time.Hour, "jitter of 1h0m0s is not shorter"},
	} {
		err := periodic.Check(c.name, every(time.Hour), now, c.horizon, c.jitter, ok)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%q, horizon %v, jitter %v) = %v; want an error with %q", c.name, c.horizon, c.jitter, err, c.want)
		}
	}
	if err := periodic.Check("s", every(time.Hour), now, 2*time.Hour, time.Minute, ok); err != nil {
		t.Errorf("Check of a good schedule = %v; want nil", err)
	}
	bad := errors.New("bad id")
	if err := periodic.Check("s", every(time.Hour), now, 2*time.Hour, 0, func(string) error { return bad }); !errors.Is(err, bad) {
		t.Errorf("Check with a refused ID = %v; want %v", err, bad)
	}
}

// TestCatchUpRetryAndOutcomes runs a schedule that starts with three missed
// ticks (two caught up), then meets an unavailable backend once and a
// duplicate once.
func TestCatchUpRetryAndOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now().Truncate(time.Minute).Add(30 * time.Second)
		var ids []string
		calls := 0
		r := periodic.New(periodic.Config{Name: "s", Schedule: every(time.Minute), Horizon: 4 * time.Minute,
			CatchUp: 2, Now: time.Now,
			Enqueue: func(_ context.Context, _ time.Time, id string) error {
				calls++
				switch calls {
				case 3:
					return driver.ErrUnavailable // retried
				case 5:
					return driver.ErrDuplicate
				}
				ids = append(ids, id)
				return nil
			}}, start)
		r.Start(start)
		time.Sleep(2 * time.Minute) // virtual: the ticks start+30s and start+90s
		synctest.Wait()
		r.Stop()
		st := r.Stats()
		if st.Enqueued != 3 || st.Duplicates != 1 || st.Missed != 0 || st.Failed != 0 {
			t.Errorf("stats %+v; want 3 enqueued, 1 duplicate", st)
		}
		want := []string{
			periodic.ID("s", start.Truncate(time.Minute).Add(-time.Minute)),
			periodic.ID("s", start.Truncate(time.Minute)),
			periodic.ID("s", start.Truncate(time.Minute).Add(time.Minute)),
		}
		if strings.Join(ids, " ") != strings.Join(want, " ") {
			t.Errorf("enqueued %v; want %v", ids, want)
		}
		if st.LastOutcome != periodic.Duplicate || !st.Next.IsZero() {
			t.Errorf("last outcome %q, next %v; want duplicate and no next after Stop", st.LastOutcome, st.Next)
		}
	})
}

// TestStopAbandonsRetry stops a runner whose enqueue keeps failing: the
// tick counts as failed with the error, and Stop returns.
func TestStopAbandonsRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		done := 0
		r := periodic.New(periodic.Config{Name: "s", Schedule: every(time.Hour), Horizon: 2 * time.Hour, Now: time.Now,
			Enqueue: func(context.Context, time.Time, string) error { return driver.ErrUnavailable },
			Done:    func() { done++ }}, start)
		r.Start(start)
		time.Sleep(time.Hour + time.Minute)
		synctest.Wait()
		r.Stop()
		r.Stop() // idempotent
		st := r.Stats()
		if st.Failed != 1 || !errors.Is(st.Err, driver.ErrUnavailable) || done != 1 {
			t.Errorf("stats %+v, Done called %d times; want 1 failed with ErrUnavailable, Done once", st, done)
		}
	})
}
