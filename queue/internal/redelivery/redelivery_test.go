package redelivery_test

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/internal/redelivery"
	"github.com/corral-go/corral/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Failed attempt n waits retry n-1's delay of the schedule; a hint replaces
// it, clamped to the schedule's cap or one minute, whichever is longer.
func TestAfter(t *testing.T) {
	errFailed := errors.New("failed")
	long := redelivery.New(backoff.Exponential(time.Second, 2, 10*time.Minute))
	short := redelivery.New(backoff.Exponential(time.Second, 2, 30*time.Second))
	for _, c := range []struct {
		name string
		d    *redelivery.Delays
		n    int
		err  error
		want time.Duration
	}{
		{"first", long, 1, errFailed, time.Second},
		{"third", long, 3, errFailed, 4 * time.Second},
		{"capped", short, 10, errFailed, 30 * time.Second},
		{"hint", long, 3, retry.After(errFailed, 5*time.Second), 5 * time.Second},
		{"hint over a cap over a minute", long, 1, retry.After(errFailed, 2*time.Hour), 10 * time.Minute},
		{"hint over a cap under a minute", short, 1, retry.After(errFailed, 2*time.Hour), time.Minute},
	} {
		if got := c.d.After(c.n, c.err); got != c.want {
			t.Errorf("%s: After(%d) = %v, want %v", c.name, c.n, got, c.want)
		}
	}
}

// With a seeded jittered schedule, the delays are the schedule's own:
// After replays the sequence to the attempt.
func TestAfterReplaysTheSequence(t *testing.T) {
	s := backoff.Exponential(time.Second, 2, time.Minute, backoff.WithJitter(backoff.FullJitter), backoff.WithSeed(7))
	d := redelivery.New(s)
	seq := s.Sequence()
	for n := 1; n <= 8; n++ {
		if got, want := d.After(n, errors.New("x")), seq.Next(); got != want {
			t.Errorf("After(%d) = %v, want the sequence's %v", n, got, want)
		}
	}
}
