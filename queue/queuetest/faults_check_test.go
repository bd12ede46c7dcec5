package queuetest

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// electing is a backend whose DeadLetters and Stats answer ErrUnavailable the first times they
// are called, as a cluster does while its streams elect leaders again after a pause.
type electing struct {
	driver.Backend
	deadFails, statsFails atomic.Int32
}

func (b *electing) DeadLetters(ctx context.Context) iter.Seq2[driver.DeadMessage, error] {
	if b.deadFails.Add(-1) >= 0 {
		return func(yield func(driver.DeadMessage, error) bool) {
			yield(driver.DeadMessage{}, fmt.Errorf("test: temporarily unavailable: %w", queue.ErrUnavailable))
		}
	}
	return b.Backend.DeadLetters(ctx)
}

func (b *electing) Stats(ctx context.Context) (driver.Stats, error) {
	if b.statsFails.Add(-1) >= 0 {
		return driver.Stats{}, fmt.Errorf("test: temporarily unavailable: %w", queue.ErrUnavailable)
	}
	return b.Backend.Stats(ctx)
}

// The fault checks list the dead letters and the stats again while the backend answers
// ErrUnavailable within the recovery bound, as the producer retries its enqueues, instead of
// failing the scenario on the first answer.
func TestFaultChecksRetryUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &electing{Backend: memory.New()}
		b.deadFails.Store(3)
		b.statsFails.Store(3)
		q, err := queue.New[string](context.Background(), queue.WithBackend(b))
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close(context.Background())
		r := &faultRun{t: t, f: Faults{CallTimeout: time.Second, Election: time.Second}, q: q}
		ctx := context.Background()
		if n := r.checkDeadLetters(ctx, jobReports{}, map[string]bool{}, 0); n != 0 {
			t.Errorf("%d dead letters, want 0", n)
		}
		r.checkNothingStored(ctx)
		if d, s := b.deadFails.Load(), b.statsFails.Load(); d != -1 || s != -1 {
			t.Errorf("DeadLetters and Stats left %d and %d failures unasked, want each asked once more after its 3", d+1, s+1)
		}
	})
}

// recorder is a testing.TB that records the errors the fault checks report instead of
// failing the test that runs them.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// buried is a backend whose dead letters are the given jobs, each dead-lettered for its
// attempts after faultMaxAttempts runs, as the contract records them.
type buried struct {
	driver.Backend
	ids []string
}

func (b *buried) DeadLetters(context.Context) iter.Seq2[driver.DeadMessage, error] {
	return func(yield func(driver.DeadMessage, error) bool) {
		for _, id := range b.ids {
			dm := driver.DeadMessage{Message: driver.Message{ID: id, Body: []byte(id), Attempt: faultMaxAttempts},
				Reason: driver.ReasonAttempts}
			for n := 1; n <= faultMaxAttempts; n++ {
				dm.History = append(dm.History, driver.Attempt{Number: n, Error: "poisoned"})
			}
			if !yield(dm, nil) {
				return
			}
		}
	}
}

// The accounting of a scenario with poison jobs accepts what a poison exit can hide (a start
// of the other poison job; every start and the burial of an innocent job taken with the
// poison) and nothing more: a poison job with no start or one acked, an innocent job never
// handled without a poison to cut it, and a job with no report that the dead letters do not
// hold (lost, not buried) each fail, as do more hidden starts than the scenario allows.
func TestFaultChecksPoisonAccounting(t *testing.T) {
	full := []int{1, 2, 3}
	for _, tc := range []struct {
		name    string
		poison  []string
		starts  map[string][]int
		acks    map[string]int
		dead    []string // the backend's dead letters
		hidden  int      // the scenario's bound of hidden starts
		want    accounting
		wantErr []string // a substring of each error wanted, in order
	}{{
		name:   "every start reported",
		poison: []string{"p1", "p2"}, starts: map[string][]int{"p1": full, "p2": full, "j": {1}},
		acks: map[string]int{"j": 1}, dead: []string{"p1", "p2"},
		want: accounting{jobs: 3, acked: 1, dead: 2},
	}, {
		name:   "a poison start hidden by the other poison's exit",
		poison: []string{"p1", "p2"}, starts: map[string][]int{"p1": {1, 3}, "p2": full, "j": {1}},
		acks: map[string]int{"j": 1}, dead: []string{"p1", "p2"}, hidden: 1,
		want: accounting{jobs: 3, acked: 1, dead: 2, inflated: 1},
	}, {
		name:   "more hidden starts than the scenario allows",
		poison: []string{"p1", "p2"}, starts: map[string][]int{"p1": {3}, "p2": full, "j": {1}},
		acks: map[string]int{"j": 1}, dead: []string{"p1", "p2"},
		want:    accounting{jobs: 3, acked: 1, dead: 2, inflated: 1},
		wantErr: []string{"1 jobs had attempt numbers beyond their handler starts, want at most 0"},
	}, {
		name:   "a poison job never started",
		poison: []string{"p1"}, starts: map[string][]int{"j": {1}},
		acks: map[string]int{"j": 1}, dead: []string{"p1"}, hidden: 1,
		want:    accounting{jobs: 2, acked: 1, dead: 1, inflated: 1},
		wantErr: []string{"poison job p1: acked 0 times, started 0 times"},
	}, {
		name:   "a poison job acked",
		poison: []string{"p1"}, starts: map[string][]int{"p1": full, "j": {1}},
		acks: map[string]int{"p1": 1, "j": 1}, dead: []string{"p1"},
		want:    accounting{jobs: 2, acked: 2, dead: 1},
		wantErr: []string{"poison job p1: acked 1 times"},
	}, {
		name:   "an innocent job cut whole and buried",
		poison: []string{"p1"}, starts: map[string][]int{"p1": full},
		dead: []string{"p1", "j"},
		want: accounting{jobs: 2, dead: 2, cut: 1},
	}, {
		name:   "an innocent job with no report, lost",
		poison: []string{"p1"}, starts: map[string][]int{"p1": full},
		dead:    []string{"p1"},
		want:    accounting{jobs: 2, dead: 1, cut: 1},
		wantErr: []string{"1 dead letters [p1], want the 1 poison jobs and the 1 innocent ones the poison cut"},
	}, {
		name:    "an innocent job never handled, no poison",
		starts:  map[string][]int{"k": {1}},
		acks:    map[string]int{"k": 1},
		want:    accounting{jobs: 2, acked: 1},
		wantErr: []string{"job j accepted, never handled"},
	}, {
		// Its starts reported on a worker that did not go down: it failed by itself.
		name:   "an innocent job buried with its runs reported",
		poison: []string{"p1"}, starts: map[string][]int{"p1": full, "j": full},
		dead:    []string{"p1", "j"},
		want:    accounting{jobs: 2, dead: 2},
		wantErr: []string{"job j accepted, never handled", "dead letter j (attempts", "2 dead letters [p1 j], want the 1 poison jobs and the 0"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := &buried{Backend: memory.New(), ids: tc.dead}
			q, err := queue.New[string](context.Background(), queue.WithBackend(b))
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close(context.Background())
			rec := &recorder{TB: t}
			r := &faultRun{t: rec, f: Faults{CallTimeout: time.Second}, q: q, accepted: map[string]bool{"j": true}}
			poison := map[string]bool{}
			for _, id := range tc.poison {
				poison[id], r.accepted[id] = true, true
			}
			rp := jobReports{acks: tc.acks, starts: tc.starts, deads: map[string][]string{},
				handled: map[string]int{}, onDead: map[string]bool{}}
			for id := range tc.starts {
				r.accepted[id] = true
			}
			for id := range tc.acks {
				rp.handled[id] = tc.acks[id]
			}
			a := r.checkJobs(rp, poison)
			r.checkBounds(a, tc.hidden, 0)
			a.dead = r.checkDeadLetters(context.Background(), rp, poison, a.cut)
			if a != tc.want {
				t.Errorf("accounting %+v, want %+v", a, tc.want)
			}
			ok := len(rec.errs) == len(tc.wantErr)
			for i := 0; ok && i < len(tc.wantErr); i++ {
				ok = strings.Contains(rec.errs[i], tc.wantErr[i])
			}
			if !ok {
				t.Errorf("the checks reported %q, want errors with %q", rec.errs, tc.wantErr)
			}
		})
	}
}

// A recovery beyond its bound says how many handler runs started meanwhile, and when the first
// did, counting only the starts from the fault's end to the ack.
func TestFaultStartsBetween(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	r := &faultRun{}
	if got, want := r.startsBetween(t0, t0.Add(time.Minute)), "no handler run started meanwhile"; got != want {
		t.Fatalf("no events: %q, want %q", got, want)
	}
	r.events = []event{
		{kind: "S", id: "before", at: t0.Add(-time.Second)},
		{kind: "S", id: "b", at: t0.Add(3 * time.Second)},
		{kind: "A", id: "a", at: t0.Add(time.Second)},
		{kind: "S", id: "a", at: t0.Add(2 * time.Second)},
		{kind: "S", id: "after", at: t0.Add(time.Minute)},
	}
	if got, want := r.startsBetween(t0, t0.Add(time.Minute)), "2 handler runs started meanwhile, the first after 2s"; got != want {
		t.Fatalf("startsBetween = %q, want %q", got, want)
	}
	if got, want := r.startsBetween(t0, t0.Add(2500*time.Millisecond)), "1 handler run started meanwhile, after 2s"; got != want {
		t.Fatalf("startsBetween, one start = %q, want %q", got, want)
	}
}
