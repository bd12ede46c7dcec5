package jetstream

import (
	"slices"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

func TestToken(t *testing.T) {
	// Tokens are valid NATS subject tokens, distinct for distinct strings, "_" only for "".
	seen := map[string]string{}
	for _, s := range []string{"", "a", "a.b", "*", ">", "job 1", "ü", "_", "a/b", "A", "a."} {
		tok := token(s)
		for _, r := range tok {
			if r == '.' || r == '*' || r == '>' || r == ' ' {
				t.Errorf("token(%q) = %q: not a subject token", s, tok)
			}
		}
		if o, dup := seen[tok]; dup {
			t.Errorf("token(%q) = token(%q) = %q", s, o, tok)
		}
		seen[tok] = s
		if (tok == "_") != (s == "") {
			t.Errorf("token(%q) = %q", s, tok)
		}
	}
}

// A dead letter stored before ReasonOverflow was renamed ReasonEvicted carries "overflow": it
// reads as evicted. Every other stored reason reads as itself.
func TestReasonFromStoredHeader(t *testing.T) {
	for stored, want := range map[string]queue.Reason{
		"overflow":  queue.ReasonEvicted,
		"evicted":   queue.ReasonEvicted,
		"attempts":  queue.ReasonAttempts,
		"permanent": queue.ReasonPermanent,
		"panic":     queue.ReasonPanic,
		"expired":   queue.ReasonExpired,
	} {
		if got := reasonFrom(stored); got != want {
			t.Errorf("reasonFrom(%q) = %q, want %q", stored, got, want)
		}
	}
}

// expireRun records the run in progress of a job the broker took back once its lease is over:
// from the run's start, or, in a record written before starts were kept, from its lease's; it
// leaves a run whose lease has not ended (Start refuses that delivery), a record with no run in
// progress, and a run the history already has.
func TestExpireRun(t *testing.T) {
	const ackWait = 10 * time.Second
	b := &Backend{lease: ackWait}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	until := start.Add(ackWait)
	expired := queue.ErrLeaseExpired.Error()
	earlier := queue.Attempt{Number: 1, Error: "boom"}
	for _, tc := range []struct {
		name string
		st   jobState
		now  time.Time
		want []queue.Attempt // the history after
		kept bool            // the run is still in progress after
	}{
		{"started", jobState{Starts: 2, Until: until, Started: start, History: []queue.Attempt{earlier}}, until,
			[]queue.Attempt{earlier, {Number: 2, Start: start, End: until, Error: expired}}, false},
		{"no start recorded", jobState{Starts: 1, Until: until}, until.Add(time.Second),
			[]queue.Attempt{{Number: 1, Start: start, End: until.Add(time.Second), Error: expired}}, false},
		{"within the margin", jobState{Starts: 1, Until: until, Started: start}, until.Add(-time.Second),
			[]queue.Attempt{{Number: 1, Start: start, End: until.Add(-time.Second), Error: expired}}, false},
		{"lease not over", jobState{Starts: 1, Until: until, Started: start}, until.Add(-time.Second - time.Nanosecond), nil, true},
		{"no run in progress", jobState{Starts: 1, History: []queue.Attempt{earlier}}, until, []queue.Attempt{earlier}, false},
		{"run recorded", jobState{Starts: 1, Until: until, Started: start, History: []queue.Attempt{earlier}}, until,
			[]queue.Attempt{earlier}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			b.expireRun(&st, tc.now)
			var until, started time.Time // the run in progress after: none, unless kept
			if tc.kept {
				until, started = tc.st.Until, tc.st.Started
			}
			if !slices.Equal(st.History, tc.want) || !st.Until.Equal(until) || !st.Started.Equal(started) {
				t.Errorf("expireRun at %v: %+v, want history %+v, run kept %v", tc.now, st, tc.want, tc.kept)
			}
		})
	}
}

func TestMessageFromHeaders(t *testing.T) {
	// A job's integer headers read back as written; absent or not a number, as 0.
	m := driver.Message{ID: "j", Version: 7, Unique: "u", UniqueFor: -3}
	got := messageFrom(jobHeader(&m), nil)
	if got.Version != 7 || got.UniqueFor != -3 {
		t.Errorf("Version %d, UniqueFor %d read back; want 7, -3", got.Version, got.UniqueFor)
	}
	h := jobHeader(&driver.Message{ID: "k"})
	if got := messageFrom(h, nil); got.Version != 0 || got.UniqueFor != 0 {
		t.Errorf("absent headers read as Version %d, UniqueFor %d; want 0, 0", got.Version, got.UniqueFor)
	}
	h.Set(hdrVersion, "x")
	if got := messageFrom(h, nil); got.Version != 0 {
		t.Errorf("Version header \"x\" read as %d, want 0", got.Version)
	}
}
