package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/internal/ratelimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// answer is one reply of a limiter.
type answer struct {
	ok   bool
	wait time.Duration
	err  error
}

// limiter replies with its answers in turn, and records what it was asked.
type limiter struct {
	answers []answer
	asked   []time.Duration // when, since the start
	rates   []ratelimit.Rate
	start   time.Time
}

func (l *limiter) TakeStart(_ context.Context, n int, per time.Duration) (bool, time.Duration, error) {
	l.asked = append(l.asked, time.Since(l.start))
	l.rates = append(l.rates, ratelimit.Rate{N: n, Per: per})
	a := l.answers[0]
	l.answers = l.answers[1:]
	return a.ok, a.wait, a.err
}

// holder records its renewals and the failures reported; its lease is lost
// at the renewal numbered lostAt (from 1; 0: never).
type holder struct {
	renewed []time.Duration
	failed  []error
	lostAt  int
	start   time.Time
}

func (h *holder) Renew() bool {
	h.renewed = append(h.renewed, time.Since(h.start))
	return len(h.renewed) != h.lostAt
}

func (h *holder) Failed(err error) { h.failed = append(h.failed, err) }

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Take asks again after each wait the limiter gives, renews the lease every
// renewal period of it, waits the error delay after a failure it reports,
// and starts at the limiter's first yes.
func TestTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errBroken := errors.New("broken")
		l := &limiter{start: time.Now(), answers: []answer{
			{wait: 250 * time.Millisecond}, {err: errBroken}, {wait: 100 * time.Millisecond}, {ok: true},
		}}
		h := &holder{start: l.start}
		rate := ratelimit.Rate{N: 3, Per: time.Second}
		delays := backoff.Constant(30 * time.Millisecond).Sequence()
		if o := ratelimit.New(l, rate).Take(t.Context(), nil, 100*time.Millisecond, &delays, h); o != ratelimit.Started {
			t.Fatalf("Take = %v, want Started", o)
		}
		ms := time.Millisecond
		if want := []time.Duration{0, 250 * ms, 280 * ms, 380 * ms}; !equal(l.asked, want) {
			t.Errorf("asked at %v, want %v", l.asked, want)
		}
		// A wait renews after each full period of it: 100 and 200 of the
		// first 250, and at the end of the 100 after the failure.
		if want := []time.Duration{100 * ms, 200 * ms, 380 * ms}; !equal(h.renewed, want) {
			t.Errorf("renewed at %v, want %v", h.renewed, want)
		}
		if len(h.failed) != 1 || h.failed[0] != errBroken {
			t.Errorf("failures reported %v, want [%v]", h.failed, errBroken)
		}
		for _, r := range l.rates {
			if r != rate {
				t.Errorf("asked for %+v, want %+v", r, rate)
			}
		}
	})
}

// A wait ends Stopped when stop is closed, and Lost when a renewal finds
// the lease lost; neither asks the limiter again.
func TestTakeStoppedOrLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &limiter{start: time.Now(), answers: []answer{{wait: time.Hour}, {wait: time.Hour}}}
		lim := ratelimit.New(l, ratelimit.Rate{N: 1, Per: time.Hour})
		delays := backoff.Constant(time.Second).Sequence()
		stop := make(chan struct{})
		time.AfterFunc(150*time.Millisecond, func() { close(stop) })
		h := &holder{start: l.start}
		if o := lim.Take(t.Context(), stop, 100*time.Millisecond, &delays, h); o != ratelimit.Stopped {
			t.Errorf("Take with stop closed at 150ms = %v, want Stopped", o)
		}
		if len(h.renewed) != 1 || len(l.asked) != 1 {
			t.Errorf("renewed %v, asked %v: want one renewal and one ask", h.renewed, l.asked)
		}
		h = &holder{start: l.start, lostAt: 2}
		if o := lim.Take(t.Context(), nil, 100*time.Millisecond, &delays, h); o != ratelimit.Lost {
			t.Errorf("Take with the lease lost at the second renewal = %v, want Lost", o)
		}
		if len(h.renewed) != 2 || len(l.asked) != 2 {
			t.Errorf("renewed %v, asked %v: want two renewals and one more ask", h.renewed, l.asked)
		}
	})
}
