package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// Two versions of one payload: v2 keeps amounts in cents.
type orderV1 struct {
	N      int
	Amount int // whole euros
}

type orderV2 struct {
	N     int
	Cents int64
}

func upgradeV1(o orderV1) (orderV2, error) { return orderV2{N: o.N, Cents: int64(o.Amount) * 100}, nil }

// sharedStore is one backend that several queues open, as the processes of
// a fleet share a broker: the test opens and closes it, and payloads cross
// it as bytes.
type sharedStore struct{ driver.Backend }

func (sharedStore) Open(context.Context, driver.Config) error { return nil }
func (sharedStore) Close(context.Context) error               { return nil }

func newStore(t *testing.T) driver.Backend {
	t.Helper()
	m := memory.New()
	if err := m.Open(context.Background(), driver.Config{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return sharedStore{m}
}

func newVersioned[T any](t *testing.T, store driver.Backend, opts ...queue.Option) *queue.Queue[T] {
	t.Helper()
	q, err := queue.New[T](context.Background(), append([]queue.Option{queue.WithBackend(store)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	return q
}

// await returns the next value from ch, or fails the test after an hour
// of the bubble's time.
func await[V any](t *testing.T, ch <-chan V) V {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Hour):
		t.Fatal("nothing came within an hour")
		panic("unreachable")
	}
}

// handling is what a fleet's handlers did, by job ID.
type handling struct {
	mu   sync.Mutex
	runs map[string][]string // the consumer of each run ("v1", "v2")
	bad  []string            // what a handler saw that it should not have
	done chan struct{}       // closed at want runs
	want int
}

func newHandling(want int) *handling {
	return &handling{runs: map[string][]string{}, done: make(chan struct{}), want: want}
}

func (h *handling) ran(id, by string, problem string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs[id] = append(h.runs[id], by)
	if problem != "" {
		h.bad = append(h.bad, id+": "+problem)
	}
	n := 0
	for _, r := range h.runs {
		n += len(r)
	}
	if n == h.want {
		close(h.done)
	}
}

// A rolling deploy: producers move from v1 to v2 while a mixed fleet of v1
// and v2 consumers serves one queue, then the v1 consumers stop. Every job is
// handled exactly once, by a consumer that understands it, at its first
// attempt (no v1 consumer spends one on a v2 job), v1 payloads reach v2
// handlers upgraded, and nothing is dead-lettered.
func TestRollingDeploy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := newStore(t)
		q1 := newVersioned[orderV1](t, store, queue.WithVersion(1))
		q2 := newVersioned[orderV2](t, store, queue.WithVersion(2), queue.WithUpgrade(1, upgradeV1))
		const before, during, after = 20, 30, 20
		h := newHandling(before + during + after)
		c1, err := q1.Consume(ctx, func(ctx context.Context, j queue.Job[orderV1]) error {
			var p string
			if j.Version != 1 || j.Attempt != 1 || j.Payload.Amount != j.Payload.N {
				p = fmt.Sprintf("v1 consumer got version %d, attempt %d, %+v", j.Version, j.Attempt, j.Payload)
			}
			h.ran(j.ID, "v1", p)
			time.Sleep(time.Millisecond)
			return nil
		}, queue.WithWorkers(2))
		if err != nil {
			t.Fatal(err)
		}
		c2, err := q2.Consume(ctx, func(ctx context.Context, j queue.Job[orderV2]) error {
			var p string
			if j.Attempt != 1 || j.Payload.Cents != int64(j.Payload.N)*100 || j.Version != 1 && j.Version != 2 {
				p = fmt.Sprintf("v2 consumer got version %d, attempt %d, %+v", j.Version, j.Attempt, j.Payload)
			}
			h.ran(j.ID, "v2", p)
			time.Sleep(time.Millisecond)
			return nil
		}, queue.WithWorkers(2))
		if err != nil {
			t.Fatal(err)
		}
		version := map[string]int{}
		enqueue1 := func(n int) {
			id, err := q1.Enqueue(ctx, orderV1{N: n, Amount: n})
			if err != nil {
				t.Fatal(err)
			}
			version[id] = 1
		}
		enqueue2 := func(n int) {
			id, err := q2.Enqueue(ctx, orderV2{N: n, Cents: int64(n) * 100})
			if err != nil {
				t.Fatal(err)
			}
			version[id] = 2
		}
		for n := range before {
			enqueue1(n)
		}
		// The deploy: some producers are at v2 already.
		for n := range during {
			if n%3 == 0 {
				enqueue1(before + n)
			} else {
				enqueue2(before + n)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		r1, err := c1.Close(ctx) // the last v1 consumers go
		if err != nil {
			t.Fatal(err)
		}
		for n := range after {
			enqueue2(before + during + n)
		}
		await(t, h.done)
		if _, err := c2.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if len(h.bad) > 0 {
			t.Fatalf("handlers saw what they should not:\n%s", strings.Join(h.bad, "\n"))
		}
		byV1, byV2 := 0, 0
		for id, v := range version {
			runs := h.runs[id]
			switch {
			case len(runs) != 1:
				t.Errorf("job %s (v%d) handled %d times (%v), want once", id, v, len(runs), runs)
			case v == 2 && runs[0] != "v2":
				t.Errorf("v2 job %s handled by %s", id, runs[0])
			case runs[0] == "v1":
				byV1++
			default:
				byV2++
			}
		}
		if byV1+byV2 != before+during+after || byV1 == 0 {
			t.Errorf("handled %d by v1 and %d by v2: want %d in all, some by v1", byV1, byV2, before+during+after)
		}
		if r1.Acked != 0 || r1.DeadLettered != 0 || r1.Abandoned != 0 {
			t.Errorf("v1 consumer's close report %+v: it held nothing to settle", r1)
		}
		s1, _ := q1.Stats(ctx)
		s2, _ := q2.Stats(ctx)
		if s1.Acked != uint64(byV1) || s2.Acked != uint64(byV2) || s1.Dead+s2.Dead != 0 ||
			s1.Retried+s2.Retried != 0 || s2.Ready+s2.InFlight+s2.Delayed != 0 {
			t.Errorf("stats v1 %+v, v2 %+v: want %d and %d acked, nothing retried, dead or left", s1, s2, byV1, byV2)
		}
	})
}

// A consumer that does not understand a job hands it back without spending
// an attempt, and counts it in Stats.AwaitingVersion until a consumer that
// understands it takes it and the record lapses.
func TestAwaitingVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := newStore(t)
		q1 := newVersioned[orderV1](t, store, queue.WithVersion(1))
		q2 := newVersioned[orderV2](t, store, queue.WithVersion(2), queue.WithUpgrade(1, upgradeV1))
		ran1 := 0
		c1, err := q1.Consume(ctx, func(ctx context.Context, j queue.Job[orderV1]) error { ran1++; return nil },
			queue.WithWorkers(2))
		if err != nil {
			t.Fatal(err)
		}
		defer c1.Close(ctx)
		start := time.Now()
		for n := range 5 {
			if _, err := q2.Enqueue(ctx, orderV2{N: n}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Second)
		s1, _ := q1.Stats(ctx)
		s2, _ := q2.Stats(ctx)
		if ran1 != 0 || s1.AwaitingVersion != 5 || s2.AwaitingVersion != 0 || s1.Ready+s1.Delayed+s1.InFlight != 5 {
			t.Fatalf("v1 ran %d; stats v1 %+v, v2 %+v: want 5 awaiting in v1's view, none run, 5 stored", ran1, s1, s2)
		}
		attempts := make(chan int, 5)
		c2, err := q2.Consume(ctx, func(ctx context.Context, j queue.Job[orderV2]) error { attempts <- j.Attempt; return nil })
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close(ctx)
		for range 5 {
			if a := await(t, attempts); a != 1 {
				t.Errorf("v2 handled a job at attempt %d, want 1: the v1 consumer spent none", a)
			}
		}
		// A record lapses twice its last hand-back delay and 10s after that
		// hand-back, which came before now with a delay of at most a quarter
		// of the time since the jobs were enqueued.
		time.Sleep(time.Since(start)/2 + 10*time.Second + time.Millisecond)
		if s1, _ := q1.Stats(ctx); s1.AwaitingVersion != 0 || s1.Acked != 0 {
			t.Errorf("v1 stats %+v: want nothing awaiting once v2 took the jobs", s1)
		}
	})
}

// An operator's view of a job whose payload version is newer than the queue's says
// StateAwaitingVersion and keeps the rest of what the backend reported: a delayed job's
// NextRun. The queue that understands it sees it delayed.
func TestInspectAwaitingVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		if err := m.Open(ctx, driver.Config{}); err != nil {
			t.Fatal(err)
		}
		defer m.Close(ctx)
		store := struct { // a shared store with the operator's verbs
			sharedStore
			driver.Admin
		}{sharedStore{m}, m}
		q1 := newVersioned[orderV1](t, store, queue.WithVersion(1))
		q2 := newVersioned[orderV2](t, store, queue.WithVersion(2), queue.WithUpgrade(1, upgradeV1))
		if _, err := q2.Enqueue(ctx, orderV2{N: 1}, queue.WithID("later"), queue.WithDelay(time.Minute)); err != nil {
			t.Fatal(err)
		}
		due := time.Now().Add(time.Minute)
		ji, err := q1.Inspect(ctx, "later")
		if err != nil || ji.State != queue.StateAwaitingVersion || !ji.NextRun.Equal(due) {
			t.Fatalf("v1 Inspect = state %q, next run %v, %v; want %q, %v", ji.State, ji.NextRun, err, queue.StateAwaitingVersion, due)
		}
		ji2, err := q2.Inspect(ctx, "later")
		if err != nil || ji2.State != queue.StateDelayed || !ji2.NextRun.Equal(due) || ji2.Job.Version != 2 {
			t.Fatalf("v2 Inspect = state %q, next run %v, version %d, %v; want %q, %v, 2", ji2.State, ji2.NextRun, ji2.Job.Version, err, queue.StateDelayed, due)
		}
	})
}

// A job that no consumer understands is dead-lettered with ReasonVersion
// exactly the version wait after it was first handed back, having spent no
// attempt; redriven once a consumer that understands it runs, it is handled.
func TestVersionWaitDeadLetters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := newStore(t)
		dead := make(chan queue.Event, 1)
		q1 := newVersioned[orderV1](t, store, queue.WithVersion(1), queue.WithVersionWait(time.Minute),
			queue.WithHooks(queue.Hooks{OnDead: func(_ context.Context, e queue.Event) { dead <- e }}))
		q2 := newVersioned[orderV2](t, store, queue.WithVersion(2))
		start := time.Now()
		id, err := q2.Enqueue(ctx, orderV2{N: 1, Cents: 100})
		if err != nil {
			t.Fatal(err)
		}
		c1, err := q1.Consume(ctx, func(ctx context.Context, j queue.Job[orderV1]) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		ev := await(t, dead)
		if ev.ID != id || ev.Reason != queue.ReasonVersion || time.Since(start) != time.Minute {
			t.Errorf("dead event %+v after %v: want %s, reason version, after exactly 1m", ev, time.Since(start), id)
		}
		if _, err := c1.Close(ctx); err != nil {
			t.Fatal(err)
		}
		var dls []queue.DeadLetter[orderV2]
		for dl, err := range q2.DeadLetters(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			dls = append(dls, dl)
		}
		if len(dls) != 1 || dls[0].Reason != queue.ReasonVersion || dls[0].Job.Version != 2 ||
			dls[0].Job.Payload.Cents != 100 || dls[0].Job.Attempt != 0 || len(dls[0].History) != 1 || dls[0].History[0].Number != 0 ||
			!strings.Contains(dls[0].History[0].Error, "payload version 2 not understood (this queue understands 1)") {
			t.Fatalf("dead letters %+v: want one at version 2, reason version, no run, one history entry (Number 0) naming the versions", dls)
		}
		if s1, _ := q1.Stats(ctx); s1.AwaitingVersion != 0 || s1.DeadLettered[queue.ReasonVersion] != 1 {
			t.Errorf("v1 stats %+v: want nothing awaiting, one dead-lettered for its version", s1)
		}
		got := make(chan queue.Job[orderV2], 1)
		c2, err := q2.Consume(ctx, func(ctx context.Context, j queue.Job[orderV2]) error { got <- j; return nil })
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close(ctx)
		if err := q2.Redrive(ctx, id); err != nil {
			t.Fatal(err)
		}
		if j := await(t, got); j.ID != id || j.Attempt != 1 || j.Payload.Cents != 100 {
			t.Errorf("redriven job %+v: want %s at attempt 1", j, id)
		}
	})
}

// An older version with no upgrade is not understood either: handed back,
// then dead-lettered with ReasonVersion. A payload that fails to decode or
// upgrade at a version the consumer understands is poison: dead-lettered at
// once with ReasonDecode, the error in its history, no handler run.
func TestVersionPoisonAndUnknownOld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := newStore(t)
		dead := make(chan queue.Event, 3)
		q0 := newVersioned[string](t, store) // version 0: raw strings
		q1 := newVersioned[orderV1](t, store, queue.WithVersion(1))
		q3 := newVersioned[orderV2](t, store, queue.WithVersion(3), queue.WithVersionWait(time.Minute),
			queue.WithUpgrade(1, func(o orderV1) (orderV2, error) {
				if o.N < 0 {
					return orderV2{}, errors.New("negative order")
				}
				return upgradeV1(o)
			}),
			queue.WithHooks(queue.Hooks{OnDead: func(_ context.Context, e queue.Event) { dead <- e }}))
		start := time.Now()
		badJSON, _ := q0.Enqueue(ctx, "{not json") // version 0: no upgrade declared
		refused, _ := q1.Enqueue(ctx, orderV1{N: -1})
		ran := 0
		c, err := q3.Consume(ctx, func(ctx context.Context, j queue.Job[orderV2]) error { ran++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		got := map[string]queue.Event{}
		at := map[string]time.Duration{}
		for range 2 {
			e := await(t, dead)
			got[e.ID], at[e.ID] = e, time.Since(start)
		}
		if e := got[refused]; e.Reason != queue.ReasonDecode || !strings.Contains(e.Err.Error(), "negative order") || at[refused] != 0 {
			t.Errorf("refused upgrade: %+v after %v, want reason decode at once naming the upgrade's error", e, at[refused])
		}
		if e := got[badJSON]; e.Reason != queue.ReasonVersion || at[badJSON] != time.Minute {
			t.Errorf("version 0 job: %+v after %v, want reason version after 1m", e, at[badJSON])
		}
		if ran != 0 {
			t.Errorf("handler ran %d times, want 0", ran)
		}
		for dl, err := range q3.DeadLetters(ctx) {
			if dl.Job.ID == refused && (err == nil || len(dl.History) != 1 || !strings.Contains(dl.History[0].Error, "negative order")) {
				t.Errorf("dead letter %+v (%v): want the upgrade's error in its history and from DeadLetters", dl, err)
			}
		}
	})
}

func TestVersionOptionsMisuse(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"negative version", "queue: WithVersion(-1): negative version", func() { queue.WithVersion(-1) }},
		{"negative wait", "queue: WithVersionWait(0s): need a positive wait", func() { queue.WithVersionWait(0) }},
		{"nil upgrade", "queue: WithUpgrade(1, nil): nil upgrade", func() { queue.WithUpgrade[orderV1, orderV2](1, nil) }},
		{"not older", "queue: WithUpgrade(2): not older than the queue's version 2 (WithVersion)", func() {
			_, _ = queue.New[orderV2](ctx, queue.WithVersion(2), queue.WithUpgrade(2, upgradeV1))
		}},
		{"twice", "queue: WithUpgrade(1) given twice", func() {
			_, _ = queue.New[orderV2](ctx, queue.WithVersion(2), queue.WithUpgrade(1, upgradeV1), queue.WithUpgrade(1, upgradeV1))
		}},
		{"wrong type", "queue: WithUpgrade(1, func(queue_test.orderV1) (queue_test.orderV2, error)): does not return string, the queue's payload type", func() {
			_, _ = queue.New[string](ctx, queue.WithVersion(2), queue.WithUpgrade(1, upgradeV1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != tc.want {
					t.Errorf("panic %v, want %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
}
