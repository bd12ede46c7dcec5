package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue"
)

// handled records the jobs a consumer handled, by ID.
type handled struct {
	mu   sync.Mutex
	jobs map[string][]queue.Job[time.Time]
}

func consumeTicks(t *testing.T, q *queue.Queue[time.Time]) *handled {
	t.Helper()
	h := &handled{jobs: map[string][]queue.Job[time.Time]{}}
	c, err := q.Consume(context.Background(), func(_ context.Context, j queue.Job[time.Time]) error {
		h.mu.Lock()
		h.jobs[j.ID] = append(h.jobs[j.ID], j)
		h.mu.Unlock()
		return nil
	}, queue.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Close(context.Background()) })
	return h
}

// ids returns the IDs handled, each of which must have been handled once.
func (h *handled) ids(t *testing.T) []string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for id, js := range h.jobs {
		if len(js) != 1 {
			t.Errorf("%s handled %d times, want once", id, len(js))
		}
		out = append(out, id)
	}
	return out
}

func tickQueue(t *testing.T, horizon time.Duration) *queue.Queue[time.Time] {
	t.Helper()
	q, err := queue.New[time.Time](context.Background(), queue.WithDedupHorizon(horizon))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	return q
}

func tickPayload(tick time.Time) time.Time { return tick }

func wantIDs(t *testing.T, got []string, name string, start time.Time, minutes ...int) {
	t.Helper()
	want := map[string]bool{}
	for _, m := range minutes {
		want[name+"@"+start.Add(time.Duration(m)*time.Minute).UTC().Format(time.RFC3339Nano)] = true
	}
	for _, id := range got {
		if !want[id] {
			t.Errorf("handled %s, not one of %v", id, want)
		}
		delete(want, id)
	}
	if len(want) > 0 {
		t.Errorf("ticks never handled: %v", want)
	}
}

// TestPeriodicOnce: three runners of one schedule (as three processes would) enqueue each tick
// once, at the tick, with the tick's ID; the others' enqueues are duplicates; Stats shows the
// next tick and the last one's outcome.
func TestPeriodicOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := tickQueue(t, time.Hour)
		h := consumeTicks(t, q)
		start := time.Now() // the bubble starts on a minute
		var ps []*queue.Periodic
		for range 3 {
			p, err := q.Periodic("report", queue.Every(time.Minute), tickPayload)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		wantIDs(t, h.ids(t), "report", start, 1, 2, 3, 4, 5)
		h.mu.Lock()
		for _, js := range h.jobs {
			if j := js[0]; !j.EnqueuedAt.Equal(j.Payload) {
				t.Errorf("%s enqueued at %v, want at its tick %v", j.ID, j.EnqueuedAt, j.Payload)
			}
		}
		h.mu.Unlock()
		var enq, dup uint64
		for _, p := range ps {
			st := p.Stats()
			enq, dup = enq+st.Enqueued, dup+st.Duplicates
			if !st.Last.Equal(start.Add(5*time.Minute)) || !st.Next.Equal(start.Add(6*time.Minute)) ||
				!st.NextAt.Equal(st.Next) || st.LastOutcome != queue.TickEnqueued && st.LastOutcome != queue.TickDuplicate {
				t.Errorf("Stats %+v: want last tick +5m, next +6m", st)
			}
		}
		if enq != 5 || dup != 10 {
			t.Errorf("enqueued %d, duplicates %d; want 5, 10", enq, dup)
		}
		s, err := q.Stats(context.Background())
		if err != nil || len(s.Periodic) != 3 || s.Periodic[0].Name != "report" {
			t.Errorf("Stats.Periodic %+v, %v: want the 3 runners", s.Periodic, err)
		}
		ps[0].Stop()
		ps[0].Stop() // idempotent
		if s, _ := q.Stats(context.Background()); len(s.Periodic) != 2 {
			t.Errorf("Stats.Periodic after a Stop: %d, want 2", len(s.Periodic))
		}
	})
}

// TestPeriodicCatchUp: after downtime, a runner enqueues the last n missed ticks (oldest
// first) as WithCatchUp says, none by default; a missed tick another runner caught up is a
// duplicate; ticks older than the dedup horizon are never enqueued.
func TestPeriodicCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := tickQueue(t, 5*time.Minute+30*time.Second)
		h := consumeTicks(t, q)
		start := time.Now()
		p, err := q.Periodic("sync", queue.Every(time.Minute), tickPayload)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2*time.Minute + time.Second)
		p.Stop()
		time.Sleep(10 * time.Minute) // down: ticks +3m to +12m missed
		var ps [4]*queue.Periodic
		for i, n := range []int{0, 1, 3, 8} { // 8: only 6 are within the horizon (+7m to +12m)
			if ps[i], err = q.Periodic("sync", queue.Every(time.Minute), tickPayload, queue.WithCatchUp(n)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		wantIDs(t, h.ids(t), "sync", start, 1, 2, 7, 8, 9, 10, 11, 12)
		st := []queue.PeriodicStats{ps[0].Stats(), ps[1].Stats(), ps[2].Stats(), ps[3].Stats()}
		if st[0].Enqueued+st[0].Duplicates != 0 || st[1].Enqueued+st[1].Duplicates != 1 ||
			st[2].Enqueued+st[2].Duplicates != 3 || st[3].Enqueued+st[3].Duplicates != 6 {
			t.Errorf("ticks dealt with by catch-up 0, 1, 3, 8: %+v", st)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		wantIDs(t, h.ids(t), "sync", start, 1, 2, 7, 8, 9, 10, 11, 12, 13)
	})
}

// TestPeriodicJitter: a tick's jitter is the same in every runner (the tick is enqueued once,
// at its jittered time, which Stats announces), within [0, max), and differs between ticks.
func TestPeriodicJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := tickQueue(t, time.Hour)
		h := consumeTicks(t, q)
		start := time.Now()
		var ps []*queue.Periodic
		for range 2 {
			p, err := q.Periodic("spread", queue.Every(time.Minute), tickPayload, queue.WithJitter(30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		synctest.Wait()
		announced := ps[0].Stats().NextAt
		if ps[1].Stats().NextAt != announced {
			t.Errorf("the runners announce %v and %v for the next tick", announced, ps[1].Stats().NextAt)
		}
		time.Sleep(10*time.Minute + 30*time.Second)
		synctest.Wait()
		ids := h.ids(t)
		wantIDs(t, ids, "spread", start, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
		jitters := map[time.Duration]bool{}
		h.mu.Lock()
		for _, js := range h.jobs {
			j := js[0]
			d := j.EnqueuedAt.Sub(j.Payload)
			jitters[d] = true
			if d < 0 || d >= 30*time.Second {
				t.Errorf("%s enqueued %v after its tick, want within [0, 30s)", j.ID, d)
			}
			if j.Payload.Equal(start.Add(time.Minute)) && !j.EnqueuedAt.Equal(announced) {
				t.Errorf("first tick enqueued at %v, announced %v", j.EnqueuedAt, announced)
			}
		}
		h.mu.Unlock()
		if len(jitters) < 5 {
			t.Errorf("jitters %v: want them to differ between ticks", jitters)
		}
	})
}

// TestPeriodicRefused: a horizon no longer than the period, an empty name or one that makes an
// ID the queue refuses, and a closed queue are errors; nil arguments and bad options panic.
func TestPeriodicRefused(t *testing.T) {
	q := tickQueue(t, time.Minute)
	for _, c := range []struct {
		name string
		s    queue.Schedule
		want string
	}{
		{"hourly", queue.Every(time.Hour), "dedup horizon 1m0s is not longer than the schedule's period 1h0m0s"},
		{"minutely", queue.Every(time.Minute), "not longer than the schedule's period 1m0s"},
		{"", queue.Every(time.Second), "empty name"},
		{" lead", queue.Every(time.Second), "job ID"},
	} {
		if _, err := q.Periodic(c.name, c.s, tickPayload); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Periodic(%q): %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := q.Periodic("jumpy", queue.Every(time.Second), tickPayload, queue.WithJitter(time.Second)); err == nil ||
		!strings.Contains(err.Error(), "jitter of 1s is not shorter than the schedule's period 1s") {
		t.Errorf("Periodic with a jitter of a period: %v", err)
	}
	if p, err := q.Periodic("ok", queue.Every(time.Second), tickPayload); err != nil {
		t.Errorf("Periodic every second, horizon a minute: %v", err)
	} else {
		p.Stop()
	}
	for what, f := range map[string]func(){
		"nil schedule": func() { _, _ = q.Periodic("x", nil, tickPayload) },
		"nil payload":  func() { _, _ = q.Periodic("x", queue.Every(time.Second), nil) },
		"Every(0)":     func() { queue.Every(0) },
		"catch-up -1":  func() { queue.WithCatchUp(-1) },
		"jitter -1s":   func() { queue.WithJitter(-time.Second) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", what)
				}
			}()
			f()
		}()
	}
	_ = q.Close(context.Background())
	if _, err := q.Periodic("late", queue.Every(time.Second), tickPayload); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Periodic on a closed queue: %v, want ErrClosed", err)
	}
}

// TestPeriodicClose: the queue's Close stops its periodic jobs (goleak checks their goroutines
// ended), and a panic in the payload function fails the tick, not the process.
func TestPeriodicClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := queue.New[time.Time](context.Background(), queue.WithDedupHorizon(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		p, err := q.Periodic("boom", queue.Every(time.Minute), func(time.Time) time.Time { panic("no payload") })
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		st := p.Stats()
		var pe *queue.PanicError
		if st.Failed != 1 || st.LastOutcome != queue.TickFailed || !errors.As(st.Err, &pe) || pe.Where != "Periodic payload" {
			t.Errorf("Stats %+v: want one failed tick, a PanicError from the payload", st)
		}
		if err := q.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); !st.Next.IsZero() {
			t.Errorf("Stats after Close: next %v, want none", st.Next)
		}
	})
}
