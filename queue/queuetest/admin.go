package queuetest

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

// The operator's verbs (driver.Admin), run when the backend implements it.

// adminQueue returns a queue of strings on a new backend, skipping the test
// if the backend does not implement driver.Admin.
func (e *env) adminQueue(opts ...queue.Option) *queue.Queue[string] {
	e.Helper()
	b := e.s.newBackend(e.T)
	if _, ok := b.(driver.Admin); !ok {
		e.Skip("backend does not implement driver.Admin")
	}
	q, err := queue.New[string](context.Background(), append([]queue.Option{queue.WithBackend(b)}, opts...)...)
	if err != nil {
		e.Fatalf("queue.New: %v", err)
	}
	e.Cleanup(func() { _ = q.Close(context.Background()) })
	return q
}

// ids lists the IDs of every page of f, following the cursors.
func (e *env) ids(q *queue.Queue[string], f queue.Filter) []string {
	e.Helper()
	var out []string
	for range 100 {
		p, err := q.Jobs(context.Background(), f)
		if err != nil {
			e.Fatalf("Jobs(%+v): %v", f, err)
		}
		for _, j := range p.Jobs {
			out = append(out, j.Job.ID)
		}
		if p.Next == "" {
			return out
		}
		f.Cursor = p.Next
	}
	e.Fatalf("Jobs(%+v): more than 100 pages", f)
	return nil
}

func (e *env) count(q *queue.Queue[string], f queue.Filter) int {
	e.Helper()
	n, err := q.Count(context.Background(), f)
	if err != nil {
		e.Fatalf("Count(%+v): %v", f, err)
	}
	return n
}

// testAdminList pins listing and counting by state, the filters, and a
// cursor that stays valid while jobs move.
func testAdminList(e *env) {
	q := e.adminQueue()
	ctx := context.Background()
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		e.enqueue(q, "p-"+id, queue.WithID(id))
	}
	e.enqueue(q, "d", queue.WithID("d1"), queue.WithDelay(1000*e.unit))
	e.enqueue(q, "k", queue.WithID("k1"), queue.WithKey("acct"), queue.WithDelay(1000*e.unit))
	e.wantCounts(q, map[queue.State]int{queue.StateReady: 5, queue.StateDelayed: 2, "": 7})
	if got := e.ids(q, queue.Filter{Key: "acct"}); !slices.Equal(got, []string{"k1"}) {
		e.Errorf("key acct lists %v, want [k1]", got)
	}
	if got := e.ids(q, queue.Filter{IDPrefix: "r", Limit: 2}); !slices.Equal(got, []string{"r1", "r2", "r3", "r4", "r5"}) {
		e.Errorf("pages of 2 list %v, want r1..r5", got)
	}

	// A cursor taken before jobs move still pages on from its place.
	p, err := q.Jobs(ctx, queue.Filter{State: queue.StateReady, Limit: 2})
	if err != nil || len(p.Jobs) != 2 || p.Jobs[0].Job.ID != "r1" || p.Jobs[0].Job.Payload != "p-r1" || p.Next == "" {
		e.Fatalf("first page %+v, %v: want r1 r2 and a cursor", p, err)
	}
	if err := q.Cancel(ctx, "r3"); err != nil {
		e.Fatalf("Cancel(r3): %v", err)
	}
	if got := e.ids(q, queue.Filter{State: queue.StateReady, Limit: 2, Cursor: p.Next}); !slices.Equal(got, []string{"r4", "r5"}) {
		e.Errorf("after the cursor: %v, want [r4 r5]", got)
	}
	if got := e.ids(q, queue.Filter{State: queue.StateDead, Reason: queue.ReasonCanceled}); !slices.Equal(got, []string{"r3"}) {
		e.Errorf("dead letters cancelled: %v, want [r3]", got)
	}
	if n := e.count(q, queue.Filter{State: queue.StateDead, Reason: queue.ReasonPermanent}); n != 0 {
		e.Errorf("dead letters permanent: %d, want 0", n)
	}

	// Bad input is refused with an error, not ignored.
	for _, f := range []queue.Filter{{Limit: 5000}, {Limit: -1}, {Cursor: "%%%"}, {State: "nope"}} {
		if _, err := q.Jobs(ctx, f); err == nil {
			e.Errorf("Jobs(%+v): no error", f)
		}
	}
}

// wantCounts checks Count for each state of want ("" for every stored job).
func (e *env) wantCounts(q *queue.Queue[string], want map[queue.State]int) {
	e.Helper()
	for st, n := range want {
		if got := e.count(q, queue.Filter{State: st}); got != n {
			e.Errorf("count of state %q: %d, want %d", st, got, n)
		}
	}
}

// testAdminInspect pins Inspect of a delayed job, a cancelled one and an
// unknown ID, and Cancel's idempotence. A backend may keep a due time to
// the millisecond (so NextRun may be up to one later than asked).
func testAdminInspect(e *env) {
	q := e.adminQueue()
	ctx := context.Background()
	before := time.Now()
	e.enqueue(q, "later", queue.WithID("d1"), queue.WithKey("k"), queue.WithDelay(1000*e.unit))
	ji, err := q.Inspect(ctx, "d1")
	if err != nil {
		e.Fatalf("Inspect(d1): %v", err)
	}
	if ji.State != queue.StateDelayed || ji.Job.Payload != "later" || ji.Job.Key != "k" || ji.Job.Attempt != 0 ||
		ji.NextRun.Before(before.Add(1000*e.unit-time.Millisecond)) || ji.NextRun.After(time.Now().Add(1000*e.unit+time.Millisecond)) {
		e.Errorf("Inspect(d1) = %+v: want delayed, payload later, key k, no attempt, next run in 1000 units", ji)
	}
	e.checkCancelWaiting(q)
}

// testAdminInspectRetry pins Inspect of a job waiting out its retry delay: delayed, after one
// run, with that run's failure in its history, and NextRun the end of the delay (to the
// millisecond, as testAdminInspect allows).
func testAdminInspectRetry(e *env) {
	ev, hooks := newEvents()
	q := e.adminQueue(hooks)
	delay := 1000 * e.unit
	e.consume(q, func(context.Context, queue.Job[string]) error { return errors.New("not yet") },
		queue.WithWorkers(1), queue.WithBackoff(backoff.Constant(delay)))
	before := time.Now()
	id := e.enqueue(q, "retried")
	recv(e, ev.retry, "retry")
	ji, err := q.Inspect(context.Background(), id)
	if err != nil {
		e.Fatalf("Inspect(%s): %v", id, err)
	}
	if ji.State != queue.StateDelayed || ji.Job.Attempt != 1 || len(ji.History) != 1 || ji.History[0].Number != 1 ||
		ji.History[0].Error != "not yet" ||
		ji.NextRun.Before(before.Add(delay-time.Millisecond)) || ji.NextRun.After(time.Now().Add(delay+time.Millisecond)) {
		e.Errorf("Inspect of a job waiting out its retry delay = %+v: want delayed, attempt 1, its failure in the history, next run in 1000 units", ji)
	}
}

// checkCancelWaiting cancels d1, a delayed job, twice and checks its dead
// letter, and that unknown IDs are refused.
func (e *env) checkCancelWaiting(q *queue.Queue[string]) {
	e.Helper()
	ctx := context.Background()
	if _, err := q.Inspect(ctx, "nope"); !errors.Is(err, queue.ErrNoJob) {
		e.Errorf("Inspect(nope): %v, want ErrNoJob", err)
	}
	if err := q.Cancel(ctx, "nope"); !errors.Is(err, queue.ErrNoJob) {
		e.Errorf("Cancel(nope): %v, want ErrNoJob", err)
	}
	for i := range 2 { // the second cancel finds a dead letter: nothing to do
		if err := q.Cancel(ctx, "d1"); err != nil {
			e.Fatalf("Cancel(d1) #%d: %v", i+1, err)
		}
	}
	ji, err := q.Inspect(ctx, "d1")
	if err != nil || ji.State != queue.StateDead || ji.Reason != queue.ReasonCanceled || ji.Job.Payload != "later" ||
		len(ji.History) != 1 || ji.History[0].Number != 0 || ji.History[0].Error != queue.ErrCanceled.Error() {
		e.Errorf("Inspect(d1) after Cancel = %+v, %v: want dead, canceled, one history entry with ErrCanceled", ji, err)
	}
	if s := stats(e, q); s.Delayed != 0 || s.Dead != 1 {
		e.Errorf("stats after cancel: %d delayed, %d dead; want 0, 1", s.Delayed, s.Dead)
	}
}

// cancelBound is how late after Cancel a running handler may see its
// context cancelled: the consumer's renewal period (half the lease the
// suite's consumers use) on the virtual clock; with real time, plus ten
// units for the backend's calls.
func (e *env) cancelBound() time.Duration {
	if e.virtual {
		return 50 * e.unit
	}
	return 60 * e.unit
}

// testAdminCancelRunning pins the cancel of a job in flight: its handler's
// context is cancelled with cause ErrCanceled within the bound, and the job
// goes to the dead letters with ReasonCanceled.
func testAdminCancelRunning(e *env) {
	ev, hooks := newEvents()
	q := e.adminQueue(hooks)
	ctx := context.Background()
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		started <- struct{}{}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return context.Cause(ctx)
	}, queue.WithWorkers(1))
	id := e.enqueue(q, "long")
	recv(e, started, "handler start")
	t0 := time.Now()
	if err := q.Cancel(ctx, id); err != nil {
		e.Fatalf("Cancel: %v", err)
	}
	if ji, err := q.Inspect(ctx, id); err == nil && ji.State == queue.StateInFlight && !ji.Canceling {
		e.Errorf("Inspect of the cancelled job in flight: %+v, want Canceling", ji)
	}
	if c := recv(e, cause, "handler cancelled"); !errors.Is(c, queue.ErrCanceled) {
		e.Errorf("handler's cause %v, want ErrCanceled", c)
	}
	if d := time.Since(t0); d > e.cancelBound() {
		e.Errorf("handler cancelled %v after Cancel, want within %v", d, e.cancelBound())
	}
	d := recv(e, ev.dead, "dead letter")
	if d.ID != id || d.Reason != queue.ReasonCanceled || d.Attempt != 1 {
		e.Errorf("dead event %+v: want %s, reason canceled, attempt 1", d, id)
	}
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Reason != queue.ReasonCanceled || len(dls[0].History) != 1 ||
		dls[0].History[0].Number != 1 {
		e.Errorf("dead letters %+v: want one, canceled, with its run in the history", dls)
	}
}

// testAdminPause pins pause and resume: a paused queue accepts jobs and its
// consumers start none, Stats and Health say so; resumed, they run.
func testAdminPause(e *env) {
	ev, hooks := newEvents()
	q := e.adminQueue(hooks)
	ctx := context.Background()
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { return nil })
	if err := q.Pause(ctx); err != nil {
		e.Fatalf("Pause: %v", err)
	}
	e.waitPaused()
	for range 3 {
		e.enqueue(q, "held")
	}
	quiet(e, ev.acked, 20*e.unit, "job handled while paused")
	s := stats(e, q)
	if !s.Paused || !s.Health.Paused || s.Ready != 3 {
		e.Errorf("stats while paused: paused %v, health paused %v, ready %d; want true, true, 3", s.Paused, s.Health.Paused, s.Ready)
	}
	if err := q.Resume(ctx); err != nil {
		e.Fatalf("Resume: %v", err)
	}
	for range 3 {
		recv(e, ev.acked, "job handled after resume")
	}
	if s := stats(e, q); s.Paused || s.Health.Paused {
		e.Errorf("stats after resume say paused")
	}
}

// waitPaused waits for the backend's pause bound (Capabilities.PauseWithin).
func (e *env) waitPaused() {
	if d := e.s.caps.PauseWithin; d > 0 {
		time.Sleep(d) // the bound the backend states: no event to wait on
	}
}

// testAdminBulk pins the bulk verbs: counts, batches, filters, idempotence.
func testAdminBulk(e *env) {
	q := e.adminQueue()
	ctx := context.Background()
	for _, id := range []string{"a1", "a2", "a3", "b1", "b2"} {
		e.enqueue(q, id, queue.WithID(id), queue.WithDelay(1000*e.unit))
	}
	e.bulk("CancelAll", q.CancelAll, queue.Filter{State: queue.StateDelayed, Limit: 2}, 5)
	e.bulk("CancelAll again", q.CancelAll, queue.Filter{}, 0)
	e.bulk("RedriveAll(a)", q.RedriveAll, queue.Filter{IDPrefix: "a", Limit: 1}, 3)
	e.bulk("RedriveAll(a) again", q.RedriveAll, queue.Filter{IDPrefix: "a"}, 0)
	if got := e.ids(q, queue.Filter{State: queue.StateReady}); !slices.Equal(got, []string{"a1", "a2", "a3"}) {
		e.Errorf("ready after redrive: %v, want a1 a2 a3", got)
	}
	e.bulk("PurgeAll", q.PurgeAll, queue.Filter{Reason: queue.ReasonCanceled}, 2)
	if s := stats(e, q); s.Dead != 0 || s.Ready != 3 {
		e.Errorf("stats after bulk: %d dead, %d ready; want 0, 3", s.Dead, s.Ready)
	}
	if _, err := q.PurgeAll(ctx, queue.Filter{State: queue.StateReady}); err == nil {
		e.Errorf("PurgeAll of ready jobs: no error")
	}
}

// bulk runs the bulk verb named what with f and checks it applied to want
// jobs.
func (e *env) bulk(what string, verb func(context.Context, queue.Filter) (int, error), f queue.Filter, want int) {
	e.Helper()
	if n, err := verb(context.Background(), f); err != nil || n != want {
		e.Errorf("%s: %d, %v; want %d", what, n, err, want)
	}
}
