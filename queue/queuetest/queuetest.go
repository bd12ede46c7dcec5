// Package queuetest is the conformance suite for queue backends. Every
// [queue.Backend] must pass [Run]: the in-memory backend does in package
// queue, broker backends do in their own tests.
//
// Run drives a real queue.Queue and queue.Consumer over the backend and
// checks, each in its own subtest: acking, delayed jobs, the retry schedule
// (exact under synctest), max attempts, permanent errors and panics to the
// dead letters with their history, deduplication while stored and within the
// horizon, ordering keys under failure and keys in parallel, each overflow
// policy, lease expiry and redelivery (never in flight twice), start-by
// expiry, redrive and purge, the shutdown report at drain and at deadline
// with the jobs left for the next consumer, the accounting identity (every
// job acked or dead-lettered exactly once) and the stats gauges.
//
// A backend that keeps its state in process runs the suite on the virtual
// clock of testing/synctest; one that talks to a broker declares RealTime,
// and the suite then uses real time, scaled by Unit, and lower bounds.
//
//	func TestConformance(t *testing.T) {
//		queuetest.Run(t, func(t *testing.T) queue.Backend { return mybackend.New(...) },
//			queuetest.Capabilities{RealTime: true})
//	}
package queuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// Capabilities declares what a backend can do, so that Run adapts or skips.
type Capabilities struct {
	// RealTime says the backend needs real time (a broker in another
	// process or on the network): the suite then runs without
	// testing/synctest, scales its durations by Unit, and asserts lower
	// bounds on delays instead of exact ones.
	RealTime bool
	// Unit is the time unit of the suite's schedules under RealTime
	// (default 100ms). Under synctest it is one second of virtual time.
	Unit time.Duration
	// Overflow lists the overflow policies the backend implements; nil
	// means all four.
	Overflow []queue.Overflow
	// ReleaseCountsAttempt says that Release cannot un-count a delivery
	// (JetStream's Nak counts it), so a job returned at shutdown comes back
	// with its attempt number increased.
	ReleaseCountsAttempt bool
}

// Run runs the conformance suite as subtests of t. newBackend returns a new,
// empty, unopened backend; it is called once per subtest, inside the
// subtest's synctest bubble unless caps.RealTime.
func Run(t *testing.T, newBackend func(t *testing.T) queue.Backend, caps Capabilities) {
	if caps.Unit <= 0 {
		caps.Unit = 100 * time.Millisecond
	}
	s := suite{newBackend: newBackend, caps: caps}
	tests := []struct {
		name string
		f    func(*env)
	}{
		{"AckOnce", testAckOnce},
		{"DelayedJob", testDelayedJob},
		{"RetrySchedule", testRetrySchedule},
		{"MaxAttemptsToDeadLetters", testMaxAttempts},
		{"PermanentToDeadLetters", testPermanent},
		{"PanicToDeadLetters", testPanic},
		{"DedupWhileStored", testDedupWhileStored},
		{"DedupHorizon", testDedupHorizon},
		{"OrderingKeyUnderFailure", testOrderingKey},
		{"KeysRunInParallel", testKeysParallel},
		{"OverflowReject", testOverflowReject},
		{"OverflowDropNewest", testOverflowDropNewest},
		{"OverflowDropOldest", testOverflowDropOldest},
		{"OverflowBlock", testOverflowBlock},
		{"LeaseExpiryRedelivers", testLeaseExpiry},
		{"BackendLeaseExpiry", testBackendLeaseExpiry},
		{"DropOldestSparesLeased", testDropOldestSparesLeased},
		{"StartByExpired", testStartBy},
		{"StartByNotAfterRelease", testStartByAfterRelease},
		{"RedriveAndPurge", testRedrive},
		{"DeadLetterIDReplaced", testDeadLetterIDReplaced},
		{"ShutdownReportDrain", testShutdownDrain},
		{"ShutdownReportDeadline", testShutdownDeadline},
		{"AccountingIdentity", testAccounting},
		{"Stats", testStats},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { s.run(t, tc.f) })
	}
}

type suite struct {
	newBackend func(t *testing.T) queue.Backend
	caps       Capabilities
}

func (s suite) run(t *testing.T, f func(*env)) {
	if s.caps.RealTime {
		f(&env{T: t, s: s, unit: s.caps.Unit})
		return
	}
	synctest.Test(t, func(t *testing.T) {
		f(&env{T: t, s: s, unit: time.Second, virtual: true})
	})
}

// env is one subtest's world.
type env struct {
	*testing.T
	s       suite
	unit    time.Duration
	virtual bool
}

func (e *env) supports(p queue.Overflow) bool {
	return e.s.caps.Overflow == nil || slices.Contains(e.s.caps.Overflow, p)
}

// newQueue returns a queue of strings on a new backend.
func (e *env) newQueue(opts ...queue.Option) *queue.Queue[string] {
	e.Helper()
	q, err := queue.New[string](append([]queue.Option{queue.WithBackend(e.s.newBackend(e.T))}, opts...)...)
	if err != nil {
		e.Fatalf("queue.New: %v", err)
	}
	return q
}

// consume starts a consumer closed at the end of the test.
func (e *env) consume(q *queue.Queue[string], h queue.Handler[string], opts ...queue.ConsumerOption) *queue.Consumer[string] {
	e.Helper()
	base := []queue.ConsumerOption{queue.Workers(4), queue.Lease(100 * e.unit), queue.Backoff(backoff.Constant(e.unit))}
	c, err := q.Consume(context.Background(), h, append(base, opts...)...)
	if err != nil {
		e.Fatalf("Consume: %v", err)
	}
	e.Cleanup(func() { _, _ = c.Close(context.Background()) })
	return c
}

// timeout bounds every wait for an event.
func (e *env) timeout() time.Duration {
	if e.virtual {
		return time.Hour
	}
	return 200 * e.unit
}

// recv waits for a value on ch.
func recv[V any](e *env, ch <-chan V, what string) V {
	e.Helper()
	t := time.NewTimer(e.timeout())
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		e.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// quiet asserts nothing arrives on ch within d.
func quiet[V any](e *env, ch <-chan V, d time.Duration, what string) {
	e.Helper()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v := <-ch:
		e.Fatalf("unexpected %s: %v", what, v)
	case <-t.C:
	}
}

// events collects settled outcomes through hooks.
type events struct {
	acked chan queue.Event
	retry chan queue.Event
	dead  chan queue.Event
}

func newEvents() (*events, queue.Option) {
	ev := &events{
		acked: make(chan queue.Event, 1000),
		retry: make(chan queue.Event, 1000),
		dead:  make(chan queue.Event, 1000),
	}
	return ev, queue.WithHooks(queue.Hooks{
		OnSuccess: func(x queue.Event) { ev.acked <- x },
		OnRetry:   func(x queue.Event) { ev.retry <- x },
		OnDead:    func(x queue.Event) { ev.dead <- x },
	})
}

func (e *env) enqueue(q *queue.Queue[string], payload string, opts ...queue.EnqueueOption) string {
	e.Helper()
	id, err := q.Enqueue(context.Background(), payload, opts...)
	if err != nil {
		e.Fatalf("Enqueue(%q): %v", payload, err)
	}
	return id
}

// elapsed asserts that got is want exactly (virtual time) or at least want
// (real time).
func (e *env) elapsed(what string, got, want time.Duration) {
	e.Helper()
	if e.virtual && got != want || !e.virtual && got < want {
		e.Errorf("%s after %v, want %v", what, got, want)
	}
}

func deadLetters(e *env, q *queue.Queue[string]) []queue.DeadLetter[string] {
	e.Helper()
	var out []queue.DeadLetter[string]
	for dl, err := range q.DeadLetters(context.Background()) {
		if err != nil {
			e.Fatalf("DeadLetters: %v", err)
		}
		out = append(out, dl)
	}
	return out
}

func stats(e *env, q *queue.Queue[string]) queue.Stats {
	e.Helper()
	s, err := q.Stats(context.Background())
	if err != nil {
		e.Fatalf("Stats: %v", err)
	}
	return s
}

var errBoom = errors.New("boom")

func testAckOnce(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	got := make(chan queue.Job[string], 10)
	ids := []string{e.enqueue(q, "a"), e.enqueue(q, "b", queue.WithID("id-b")), e.enqueue(q, "c")}
	if ids[1] != "id-b" {
		e.Errorf("Enqueue returned ID %q, want id-b", ids[1])
	}
	if ids[0] == "" || ids[0] == ids[2] {
		e.Errorf("generated IDs %q and %q: want distinct and non-empty", ids[0], ids[2])
	}
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		got <- j
		return nil
	})
	want := map[string]string{ids[0]: "a", ids[1]: "b", ids[2]: "c"}
	for range 3 {
		j := recv(e, got, "job")
		if want[j.ID] != j.Payload || j.Attempt != 1 || j.EnqueuedAt.IsZero() {
			e.Errorf("job %+v: want payload %q, attempt 1, enqueue time", j, want[j.ID])
		}
		delete(want, j.ID)
	}
	for range 3 {
		recv(e, ev.acked, "ack")
	}
	quiet(e, got, 5*e.unit, "redelivery")
	s := stats(e, q)
	if s.Enqueued != 3 || s.Acked != 3 || s.Ready+s.InFlight+s.Delayed+s.Dead != 0 {
		e.Errorf("stats %+v: want 3 enqueued and acked, nothing stored", s)
	}
}

func testDelayedJob(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	start := time.Now()
	started := make(chan time.Duration, 2)
	e.enqueue(q, "later", queue.WithDelay(5*e.unit))
	e.enqueue(q, "at", queue.NotBefore(start.Add(2*e.unit)))
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		started <- time.Since(start)
		return nil
	})
	if s := stats(e, q); s.Delayed != 2 {
		e.Errorf("stats %+v: want 2 delayed", s)
	}
	e.elapsed("NotBefore job started", recv(e, started, "job at NotBefore"), 2*e.unit)
	e.elapsed("delayed job started", recv(e, started, "delayed job"), 5*e.unit)
	recv(e, ev.acked, "ack")
	recv(e, ev.acked, "ack")
}

func testRetrySchedule(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	start := time.Now()
	var times []time.Duration
	e.enqueue(q, "flaky")
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		times = append(times, time.Since(start))
		if j.Attempt < 4 {
			return fmt.Errorf("attempt %d: %w", j.Attempt, errBoom)
		}
		return nil
	}, queue.Workers(1), queue.Backoff(backoff.Exponential(e.unit, 2, 100*e.unit)))
	for i := range 3 {
		r := recv(e, ev.retry, "retry")
		if r.Attempt != i+1 || !errors.Is(r.Err, errBoom) || r.Delay != e.unit<<i {
			e.Errorf("retry event %+v: want attempt %d, error boom, delay %v", r, i+1, e.unit<<i)
		}
	}
	recv(e, ev.acked, "ack")
	want := []time.Duration{0, e.unit, 3 * e.unit, 7 * e.unit}
	if len(times) != 4 {
		e.Fatalf("handler ran %d times, want 4", len(times))
	}
	for i := range want {
		e.elapsed(fmt.Sprintf("attempt %d", i+1), times[i], want[i])
	}
	if s := stats(e, q); s.Retried != 3 || s.Acked != 1 {
		e.Errorf("stats %+v: want 3 retried, 1 acked", s)
	}
}

func testMaxAttempts(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	calls := 0
	id := e.enqueue(q, "doomed")
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		calls++
		return fmt.Errorf("attempt %d: %w", j.Attempt, errBoom)
	}, queue.Workers(1), queue.MaxAttempts(3))
	d := recv(e, ev.dead, "dead letter")
	if d.ID != id || d.Reason != queue.ReasonAttempts || d.Attempt != 3 || !errors.Is(d.Err, errBoom) {
		e.Errorf("dead event %+v: want %s, reason attempts, attempt 3, error boom", d, id)
	}
	if calls != 3 {
		e.Errorf("handler ran %d times, want 3", calls)
	}
	dls := deadLetters(e, q)
	if len(dls) != 1 {
		e.Fatalf("%d dead letters, want 1", len(dls))
	}
	dl := dls[0]
	if dl.Job.ID != id || dl.Job.Payload != "doomed" || dl.Reason != queue.ReasonAttempts || len(dl.History) != 3 {
		e.Fatalf("dead letter %+v: want payload doomed, reason attempts, 3 attempts", dl)
	}
	for i, a := range dl.History {
		if a.Number != i+1 || a.Error != fmt.Sprintf("attempt %d: boom", i+1) || a.Start.IsZero() || a.End.Before(a.Start) {
			e.Errorf("history[%d] = %+v", i, a)
		}
	}
	if s := stats(e, q); s.Dead != 1 || s.DeadLettered[queue.ReasonAttempts] != 1 || s.Retried != 2 {
		e.Errorf("stats %+v: want 1 dead (attempts), 2 retried", s)
	}
}

func testPermanent(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	calls := 0
	e.enqueue(q, "bad input")
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		calls++
		return retry.Permanent(errBoom)
	}, queue.MaxAttempts(5))
	d := recv(e, ev.dead, "dead letter")
	if d.Reason != queue.ReasonPermanent || d.Attempt != 1 || !errors.Is(d.Err, errBoom) {
		e.Errorf("dead event %+v: want reason permanent after attempt 1", d)
	}
	if calls != 1 {
		e.Errorf("handler ran %d times, want 1", calls)
	}
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Reason != queue.ReasonPermanent || len(dls[0].History) != 1 ||
		!strings.Contains(dls[0].History[0].Error, "boom") {
		e.Errorf("dead letters %+v", dls)
	}
}

func testPanic(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	calls := 0
	e.enqueue(q, "poison")
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		calls++
		panic("poison pill")
	}, queue.MaxAttempts(5))
	d := recv(e, ev.dead, "dead letter")
	if d.Reason != queue.ReasonPanic || d.Attempt != 1 {
		e.Errorf("dead event %+v: want reason panic after attempt 1", d)
	}
	if calls != 1 {
		e.Errorf("handler ran %d times, want 1", calls)
	}
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Reason != queue.ReasonPanic || !strings.Contains(dls[0].History[0].Error, "poison pill") {
		e.Errorf("dead letters %+v", dls)
	}
	if s := stats(e, q); s.DeadLettered[queue.ReasonPanic] != 1 {
		e.Errorf("stats %+v: want 1 dead by panic", s)
	}
}

func testDedupWhileStored(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	e.enqueue(q, "first", queue.WithID("x"))
	if id, err := q.Enqueue(context.Background(), "second", queue.WithID("x")); !errors.Is(err, queue.ErrDuplicate) || id != "x" {
		e.Fatalf("Enqueue of a stored ID = %q, %v; want x, ErrDuplicate", id, err)
	}
	got := make(chan string, 10)
	c := e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		got <- j.Payload
		return nil
	})
	if p := recv(e, got, "job"); p != "first" {
		e.Errorf("handled %q, want first", p)
	}
	recv(e, ev.acked, "ack")
	if _, err := c.Close(context.Background()); err != nil {
		e.Fatal(err)
	}
	// Without a horizon the ID is free once the job left the queue.
	e.enqueue(q, "third", queue.WithID("x"))
	if s := stats(e, q); s.Duplicates != 1 || s.Enqueued != 2 {
		e.Errorf("stats %+v: want 1 duplicate, 2 enqueued", s)
	}
}

func testDedupHorizon(e *env) {
	ev, hooks := newEvents()
	horizon := 20 * e.unit
	q := e.newQueue(hooks, queue.WithDedupHorizon(horizon))
	start := time.Now()
	e.enqueue(q, "v1", queue.WithID("x"))
	accepted := time.Now() // the backend's enqueue time is in [start, accepted]
	got := make(chan string, 10)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		got <- j.Payload
		return nil
	})
	recv(e, got, "job")
	recv(e, ev.acked, "ack")
	if _, err := q.Enqueue(context.Background(), "v2", queue.WithID("x")); !errors.Is(err, queue.ErrDuplicate) {
		e.Fatalf("Enqueue within the horizon after ack: %v, want ErrDuplicate", err)
	}
	inside := horizon - e.unit // virtual time: just inside
	if !e.virtual {
		inside = horizon / 2 // real time: leave room for a slow machine
	}
	time.Sleep(inside - time.Since(start))
	_, err := q.Enqueue(context.Background(), "v3", queue.WithID("x"))
	// Under real time a slow machine may have run past the horizon: the
	// check only binds while the call surely ended inside it.
	if !errors.Is(err, queue.ErrDuplicate) && (e.virtual || time.Since(start) < horizon) {
		e.Fatalf("Enqueue %v into a horizon of %v: %v, want ErrDuplicate", time.Since(start), horizon, err)
	}
	if err == nil {
		e.Skipf("the machine was too slow to test inside the horizon of %v", horizon)
	}
	time.Sleep(horizon + e.unit - time.Since(accepted)) // now surely outside
	e.enqueue(q, "v4", queue.WithID("x"))
	if p := recv(e, got, "job after the horizon"); p != "v4" {
		e.Errorf("handled %q, want v4", p)
	}
	recv(e, ev.acked, "ack")
	if s := stats(e, q); s.Duplicates != 2 || s.Enqueued != 2 || s.Acked != 2 {
		e.Errorf("stats %+v: want 2 duplicates, 2 enqueued and acked", s)
	}
}

// testOrderingKey: jobs with one key run one at a time in enqueue order, a
// failing job holding the key through its retries.
func testOrderingKey(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	var (
		mu      sync.Mutex
		order   []string
		running int
		overlap bool
	)
	for i := range 5 {
		e.enqueue(q, fmt.Sprintf("k%d", i), queue.WithKey("k"))
	}
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		mu.Lock()
		running++
		if running > 1 {
			overlap = true
		}
		order = append(order, fmt.Sprintf("%s#%d", j.Payload, j.Attempt))
		mu.Unlock()
		time.Sleep(e.unit / 10) // give a wrongly scheduled sibling time to overlap
		mu.Lock()
		running--
		mu.Unlock()
		if j.Payload == "k1" && j.Attempt < 3 {
			return errBoom
		}
		return nil
	}, queue.Workers(4), queue.Backoff(backoff.Constant(2*e.unit)))
	for range 5 {
		recv(e, ev.acked, "ack")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"k0#1", "k1#1", "k1#2", "k1#3", "k2#1", "k3#1", "k4#1"}
	if !slices.Equal(order, want) {
		e.Errorf("handled %v, want %v", order, want)
	}
	if overlap {
		e.Errorf("two jobs with the same key ran at once")
	}
}

// testKeysParallel: different keys do not wait for each other.
func testKeysParallel(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	aStarted := make(chan struct{})
	bStarted := make(chan struct{})
	e.enqueue(q, "a", queue.WithKey("a"))
	e.enqueue(q, "b", queue.WithKey("b"))
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		mine, other := aStarted, bStarted
		if j.Payload == "b" {
			mine, other = bStarted, aStarted
		}
		close(mine)
		select { // each waits for the other: only parallel handling finishes
		case <-other:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}, queue.Workers(2))
	recv(e, ev.acked, "ack")
	recv(e, ev.acked, "ack")
	if s := stats(e, q); s.Retried != 0 {
		e.Errorf("stats %+v: keys did not run in parallel", s)
	}
}

func (e *env) skipUnless(p queue.Overflow) {
	if !e.supports(p) {
		e.Skipf("backend does not implement %v", p)
	}
}

func testOverflowReject(e *env) {
	e.skipUnless(queue.Reject)
	q := e.newQueue(queue.WithCapacity(2), queue.WithOverflow(queue.Reject))
	e.enqueue(q, "1")
	e.enqueue(q, "2")
	if _, err := q.Enqueue(context.Background(), "3"); !errors.Is(err, queue.ErrFull) {
		e.Fatalf("Enqueue at capacity: %v, want ErrFull", err)
	}
	if s := stats(e, q); s.Rejected != 1 || s.Enqueued != 2 || s.Ready != 2 {
		e.Errorf("stats %+v: want 1 rejected, 2 ready", s)
	}
}

func testOverflowDropNewest(e *env) {
	e.skipUnless(queue.DropNewest)
	var dropped []string
	q := e.newQueue(queue.WithCapacity(2), queue.WithOverflow(queue.DropNewest),
		queue.WithHooks(queue.Hooks{OnDrop: func(x queue.Event) { dropped = append(dropped, x.ID) }}))
	e.enqueue(q, "1")
	e.enqueue(q, "2")
	if _, err := q.Enqueue(context.Background(), "3", queue.WithID("third")); !errors.Is(err, queue.ErrDropped) {
		e.Fatalf("Enqueue at capacity: %v, want ErrDropped", err)
	}
	if len(dropped) != 1 || dropped[0] != "third" {
		e.Errorf("OnDrop saw %v, want [third]", dropped)
	}
	got := make(chan string, 3)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { got <- j.Payload; return nil }, queue.Workers(1))
	if a, b := recv(e, got, "job"), recv(e, got, "job"); a != "1" || b != "2" {
		e.Errorf("handled %q, %q; want 1, 2", a, b)
	}
	quiet(e, got, 5*e.unit, "dropped job")
	if s := stats(e, q); s.Dropped != 1 || s.Dead != 0 {
		e.Errorf("stats %+v: want 1 dropped, none dead", s)
	}
}

func testOverflowDropOldest(e *env) {
	e.skipUnless(queue.DropOldest)
	ev, hooks := newEvents()
	q := e.newQueue(hooks, queue.WithCapacity(2), queue.WithOverflow(queue.DropOldest))
	first := e.enqueue(q, "1")
	e.enqueue(q, "2")
	e.enqueue(q, "3")
	d := recv(e, ev.dead, "eviction")
	if d.ID != first || d.Reason != queue.ReasonOverflow {
		e.Errorf("dead event %+v: want %s with reason overflow", d, first)
	}
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Job.ID != first || dls[0].Job.Payload != "1" || dls[0].Reason != queue.ReasonOverflow {
		e.Fatalf("dead letters %+v: want job 1 with reason overflow", dls)
	}
	got := make(chan string, 3)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { got <- j.Payload; return nil }, queue.Workers(1))
	if a, b := recv(e, got, "job"), recv(e, got, "job"); a != "2" || b != "3" {
		e.Errorf("handled %q, %q; want 2, 3", a, b)
	}
	if s := stats(e, q); s.Enqueued != 3 || s.DeadLettered[queue.ReasonOverflow] != 1 {
		e.Errorf("stats %+v: want 3 enqueued, 1 dead by overflow", s)
	}
}

func testOverflowBlock(e *env) {
	e.skipUnless(queue.Block)
	ev, hooks := newEvents()
	q := e.newQueue(hooks, queue.WithCapacity(1), queue.WithOverflow(queue.Block))
	e.enqueue(q, "1")
	// A blocked Enqueue ends with its ctx.
	start := time.Now() // before the deadline is set, so elapsed is a lower bound
	ctx, cancel := context.WithTimeout(context.Background(), 3*e.unit)
	if _, err := q.Enqueue(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
		e.Fatalf("blocked Enqueue: %v, want deadline exceeded", err)
	}
	cancel()
	e.elapsed("blocked Enqueue gave up", time.Since(start), 3*e.unit)
	// A blocked Enqueue proceeds when a job leaves.
	done := make(chan error, 1)
	go func() {
		_, err := q.Enqueue(context.Background(), "2")
		done <- err
	}()
	quiet(e, done, 3*e.unit, "Enqueue returned while full")
	got := make(chan string, 3)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { got <- j.Payload; return nil }, queue.Workers(1))
	if err := recv(e, done, "blocked Enqueue"); err != nil {
		e.Fatalf("blocked Enqueue: %v", err)
	}
	if a, b := recv(e, got, "job"), recv(e, got, "job"); a != "1" || b != "2" {
		e.Errorf("handled %q, %q; want 1, 2", a, b)
	}
	recv(e, ev.acked, "ack")
	recv(e, ev.acked, "ack")
}

func testLeaseExpiry(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	lease := 10 * e.unit
	var (
		mu      sync.Mutex
		running int
		twice   bool
		starts  []time.Duration
	)
	start := time.Now()
	e.enqueue(q, "slow")
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		mu.Lock()
		running++
		twice = twice || running > 1
		starts = append(starts, time.Since(start))
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		if j.Attempt == 1 {
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, queue.ErrLeaseExpired) {
				return fmt.Errorf("cause %v, want ErrLeaseExpired", cause)
			}
			time.Sleep(2 * e.unit) // overrun past the cancellation
			return ctx.Err()
		}
		return nil
	}, queue.Workers(4), queue.Lease(lease), queue.Backoff(backoff.Constant(0)))
	r := recv(e, ev.retry, "retry after lease expiry")
	if !errors.Is(r.Err, queue.ErrLeaseExpired) || r.Attempt != 1 {
		e.Errorf("retry event %+v: want attempt 1 failed with ErrLeaseExpired", r)
	}
	recv(e, ev.acked, "ack")
	mu.Lock()
	defer mu.Unlock()
	if twice {
		e.Errorf("the job was in flight twice at once")
	}
	if len(starts) != 2 {
		e.Fatalf("handler ran %d times, want 2", len(starts))
	}
	e.elapsed("redelivery", starts[1], lease+2*e.unit)
}

// openBackend returns a new backend opened with cfg, driven directly (no
// Queue, no Consumer).
func (e *env) openBackend(cfg queue.Config) queue.Backend {
	e.Helper()
	b := e.s.newBackend(e.T)
	if err := b.Open(context.Background(), cfg); err != nil {
		e.Fatalf("Open: %v", err)
	}
	return b
}

// received is what a Receive in its own goroutine got.
type received struct {
	d  *queue.Delivery
	at time.Time
}

// testBackendLeaseExpiry drives the backend alone: a job received and never
// settled (its consumer died) is delivered again when the backend's lease
// ends, to a receiver that was already waiting, as attempt 2; the stale
// delivery can no longer be renewed, acked or nacked.
func testBackendLeaseExpiry(e *env) {
	b := e.openBackend(queue.Config{})
	lease := 5 * e.unit
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	got := make(chan received, 2)
	for range 2 {
		wg.Go(func() {
			var d queue.Delivery
			if err := b.Receive(ctx, lease, &d); err == nil {
				got <- received{&d, time.Now()}
			}
		})
	}
	if e.virtual {
		synctest.Wait() // both receivers wait
	} else {
		time.Sleep(e.unit) // no way to observe a broker's waiting receivers
	}
	start := time.Now() // no delivery before this, so a lower bound of the lease's start
	if _, err := b.Enqueue(context.Background(), queue.Message{ID: "J", Body: []byte("j"), Value: "j"}); err != nil {
		e.Fatalf("Enqueue: %v", err)
	}
	first := recv(e, got, "first delivery")
	if first.d.ID != "J" || first.d.Attempt != 1 || first.d.Redelivered {
		e.Errorf("first delivery %+v: want J, attempt 1, not redelivered", first.d)
	}
	second := recv(e, got, "redelivery after the lease")
	e.elapsed("redelivery", second.at.Sub(start), lease)
	if second.d.ID != "J" || second.d.Attempt != 2 || !second.d.Redelivered {
		e.Errorf("second delivery %+v: want J, attempt 2, redelivered", second.d)
	}
	bg := context.Background()
	if err := b.Extend(bg, first.d, lease); !errors.Is(err, queue.ErrLeaseLost) {
		e.Errorf("Extend of the stale delivery: %v, want ErrLeaseLost", err)
	}
	if err := b.Ack(bg, first.d); !errors.Is(err, queue.ErrLeaseLost) {
		e.Errorf("Ack of the stale delivery: %v, want ErrLeaseLost", err)
	}
	if err := b.Nack(bg, first.d, 0, queue.Attempt{Number: 1, Error: "stale"}); !errors.Is(err, queue.ErrLeaseLost) {
		e.Errorf("Nack of the stale delivery: %v, want ErrLeaseLost", err)
	}
	if err := b.Ack(bg, second.d); err != nil {
		e.Errorf("Ack of the current delivery: %v", err)
	}
	if st, err := b.Stats(bg); err != nil || st.Ready != 0 || st.InFlight != 0 || st.Delayed != 0 {
		e.Errorf("stats %+v, %v: want an empty backend", st, err)
	}
}

// testDropOldestSparesLeased: DropOldest evicts the oldest job that is not
// leased; the leased one stays, and its delivery can still be acked.
func testDropOldestSparesLeased(e *env) {
	e.skipUnless(queue.DropOldest)
	b := e.openBackend(queue.Config{Capacity: 2, Overflow: queue.DropOldest})
	bg := context.Background()
	for _, id := range []string{"A", "B"} {
		if _, err := b.Enqueue(bg, queue.Message{ID: id, Body: []byte(id), Value: id}); err != nil {
			e.Fatalf("Enqueue(%s): %v", id, err)
		}
	}
	var d queue.Delivery
	if err := b.Receive(bg, 100*e.unit, &d); err != nil || d.ID != "A" {
		e.Fatalf("Receive: %v, %q; want A", err, d.ID)
	}
	res, err := b.Enqueue(bg, queue.Message{ID: "C", Body: []byte("C"), Value: "C"})
	if err != nil || !slices.Equal(res.Evicted, []string{"B"}) {
		e.Fatalf("Enqueue(C) at capacity: %+v, %v; want B evicted", res, err)
	}
	if err := b.Ack(bg, &d); err != nil {
		e.Errorf("Ack of the leased job after an eviction: %v", err)
	}
	var dead []string
	for dm, err := range b.DeadLetters(bg) {
		if err != nil {
			e.Fatalf("DeadLetters: %v", err)
		}
		dead = append(dead, dm.ID+":"+string(dm.Reason))
	}
	if !slices.Equal(dead, []string{"B:overflow"}) {
		e.Errorf("dead letters %v, want [B:overflow]", dead)
	}
}

func testStartBy(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks, queue.WithMaxWait(5*e.unit))
	late := e.enqueue(q, "late", queue.StartBy(time.Now().Add(2*e.unit)))
	defaulted := e.enqueue(q, "defaulted")
	time.Sleep(6 * e.unit)
	ran := make(chan string, 3)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { ran <- j.ID; return nil })
	got := map[string]queue.Reason{}
	for range 2 {
		d := recv(e, ev.dead, "expiry")
		got[d.ID] = d.Reason
	}
	if got[late] != queue.ReasonExpired || got[defaulted] != queue.ReasonExpired {
		e.Errorf("dead letters %v: want both expired", got)
	}
	quiet(e, ran, 2*e.unit, "expired job handled")
	if s := stats(e, q); s.DeadLettered[queue.ReasonExpired] != 2 {
		e.Errorf("stats %+v: want 2 expired", s)
	}
}

// A job delivered before its start-by deadline and released (as a consumer
// does at shutdown) is not expired when it comes back after the deadline:
// it was started in time (Delivery.Redelivered), whatever its attempt
// number.
func testStartByAfterRelease(e *env) {
	ev, hooks := newEvents()
	b := e.s.newBackend(e.T)
	q, err := queue.New[string](queue.WithBackend(b), hooks)
	if err != nil {
		e.Fatalf("queue.New: %v", err)
	}
	id := e.enqueue(q, "x", queue.StartBy(time.Now().Add(5*e.unit)))
	bg := context.Background()
	var d queue.Delivery
	if err := b.Receive(bg, 150*e.unit, &d); err != nil || d.ID != id {
		e.Fatalf("Receive: %v, %q; want %s", err, d.ID, id)
	}
	if err := b.Release(bg, &d); err != nil {
		e.Fatalf("Release: %v", err)
	}
	time.Sleep(6 * e.unit) // past the start-by deadline
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { return nil }, queue.Workers(1))
	if a := recv(e, ev.acked, "ack of the released job"); a.ID != id {
		e.Errorf("acked %s, want %s", a.ID, id)
	}
	quiet(e, ev.dead, e.unit, "dead letter of a job started in time")
}

// testDeadLetterIDReplaced: two jobs with one ID, one after the other,
// both dead: the newer dead letter replaces the older, so that Redrive and
// Purge name one job.
func testDeadLetterIDReplaced(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		return retry.Permanent(errors.New("bad " + j.Payload))
	}, queue.Workers(1))
	for _, p := range []string{"v1", "v2"} {
		e.enqueue(q, p, queue.WithID("X"))
		if d := recv(e, ev.dead, "dead letter"); d.ID != "X" {
			e.Fatalf("dead %s, want X", d.ID)
		}
	}
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Job.ID != "X" || dls[0].Job.Payload != "v2" {
		e.Fatalf("dead letters %+v: want one, X with payload v2", dls)
	}
	if err := q.Purge(context.Background(), "X"); err != nil {
		e.Errorf("Purge(X): %v", err)
	}
	if err := q.Purge(context.Background(), "X"); !errors.Is(err, queue.ErrNotFound) {
		e.Errorf("second Purge(X): %v, want ErrNotFound", err)
	}
	if s := stats(e, q); s.Dead != 0 {
		e.Errorf("stats %+v: want no dead letters", s)
	}
}

func testRedrive(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	poisoned := true
	var mu sync.Mutex
	id := e.enqueue(q, "poison")
	other := e.enqueue(q, "junk")
	attempts := make(chan int, 5)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		mu.Lock()
		p := poisoned
		mu.Unlock()
		if j.ID == id {
			attempts <- j.Attempt
		}
		if p {
			panic("bad " + j.Payload)
		}
		return nil
	}, queue.Workers(1))
	recv(e, ev.dead, "dead letter")
	recv(e, ev.dead, "dead letter")
	if n := len(deadLetters(e, q)); n != 2 {
		e.Fatalf("%d dead letters, want 2", n)
	}
	mu.Lock()
	poisoned = false // the bug is fixed
	mu.Unlock()
	if err := q.Redrive(context.Background(), id); err != nil {
		e.Fatalf("Redrive: %v", err)
	}
	if a := recv(e, attempts, "attempt"); a != 1 {
		e.Errorf("first attempt %d", a)
	}
	if a := recv(e, attempts, "redriven attempt"); a != 1 {
		e.Errorf("redriven job delivered as attempt %d, want 1 (fresh count)", a)
	}
	if a := recv(e, ev.acked, "ack of redriven job"); a.ID != id {
		e.Errorf("acked %s, want %s", a.ID, id)
	}
	if err := q.Redrive(context.Background(), id); !errors.Is(err, queue.ErrNotFound) {
		e.Errorf("second Redrive: %v, want ErrNotFound", err)
	}
	if err := q.Purge(context.Background(), other); err != nil {
		e.Fatalf("Purge: %v", err)
	}
	if err := q.Purge(context.Background(), other); !errors.Is(err, queue.ErrNotFound) {
		e.Errorf("second Purge: %v, want ErrNotFound", err)
	}
	if dls := deadLetters(e, q); len(dls) != 0 {
		e.Errorf("dead letters after redrive and purge: %+v", dls)
	}
}

// testShutdownDrain: Close waits for running handlers and reports them; the
// jobs not started stay for the next consumer.
func testShutdownDrain(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	release := make(chan struct{})
	started := make(chan string, 10)
	for _, p := range []string{"ok", "fail", "rest1", "rest2"} {
		e.enqueue(q, p, queue.WithKey(p)) // keys only to fix the start order per consumer
	}
	c := e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		started <- j.Payload
		<-release
		if j.Payload == "fail" {
			return errBoom
		}
		return nil
	}, queue.Workers(2))
	first := map[string]bool{recv(e, started, "start"): true, recv(e, started, "start"): true}
	closed := make(chan queue.Report, 1)
	go func() {
		r, err := c.Close(context.Background())
		if err != nil {
			e.Errorf("Close: %v", err)
		}
		closed <- r
	}()
	quiet(e, closed, 2*e.unit, "Close returned before its handlers")
	close(release)
	r := recv(e, closed, "Close")
	want := queue.Report{}
	for p := range first {
		if p == "fail" {
			want.Returned++
		} else {
			want.Acked++
		}
	}
	if r != want {
		e.Errorf("report %+v, want %+v (first jobs %v)", r, want, first)
	}
	quiet(e, started, 2*e.unit, "job started after Close")
	// A later consumer gets everything that is left.
	left := 4 - want.Acked
	if s := stats(e, q); s.Ready+s.Delayed != left || s.InFlight != 0 {
		e.Errorf("stats after Close %+v: want %d stored", s, left)
	}
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { return nil })
	for range 4 { // the ack events of both consumers
		recv(e, ev.acked, "ack")
	}
	if s := stats(e, q); s.Acked != 4 {
		e.Errorf("stats %+v: want 4 acked", s)
	}
}

// testShutdownDeadline: at Close's deadline running handlers are cancelled,
// their jobs returned and reported; a later consumer handles them.
func testShutdownDeadline(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	started := make(chan struct{}, 10)
	for range 3 {
		e.enqueue(q, "stuck")
	}
	// A short lease, so that jobs abandoned at the deadline come back soon.
	lease := queue.Lease(10 * e.unit)
	c := e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		started <- struct{}{}
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), queue.ErrClosed) {
			return fmt.Errorf("cause %v, want one matching ErrClosed", context.Cause(ctx))
		}
		return context.Cause(ctx)
	}, queue.Workers(2), lease)
	recv(e, started, "start")
	recv(e, started, "start")
	start := time.Now() // before the deadline is set, so elapsed is a lower bound
	ctx, cancel := context.WithTimeout(context.Background(), 2*e.unit)
	defer cancel()
	r, err := c.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		e.Errorf("Close: %v, want deadline exceeded", err)
	}
	e.elapsed("Close", time.Since(start), 2*e.unit)
	// The end of Close's ctx ends its backend calls: a backend that honours
	// that ctx fails the release of the cancelled handlers' jobs, which are
	// then abandoned (redelivered when their leases end) instead of
	// returned.
	if r.Returned+r.Abandoned != 2 || r.Acked != 0 || r.DeadLettered != 0 {
		e.Errorf("report %+v, want 2 returned or abandoned", r)
	}
	if s := stats(e, q); s.Ready != 1+r.Returned || s.InFlight != r.Abandoned || s.Retried != 0 || s.Dead != 0 {
		e.Errorf("stats after Close %+v (report %+v): want returned jobs ready, abandoned ones in flight, nothing retried or dead", s, r)
	}
	attempts := make(chan int, 3)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error { attempts <- j.Attempt; return nil }, lease)
	for range 3 {
		recv(e, ev.acked, "ack")
		// An abandoned job's lease ended in the backend: its attempt was
		// spent.
		if a := recv(e, attempts, "attempt"); a != 1 && !e.s.caps.ReleaseCountsAttempt && r.Abandoned == 0 {
			e.Errorf("returned job delivered as attempt %d, want 1", a)
		}
	}
}

// testAccounting: every accepted job ends acked or dead-lettered exactly
// once, and the counters add up.
func testAccounting(e *env) {
	var mu sync.Mutex
	final := map[string]int{}
	note := func(x queue.Event) { mu.Lock(); final[x.ID]++; mu.Unlock() }
	done := make(chan struct{}, 1000)
	q := e.newQueue(queue.WithHooks(queue.Hooks{
		OnSuccess: func(x queue.Event) { note(x); done <- struct{}{} },
		OnDead:    func(x queue.Event) { note(x); done <- struct{}{} },
	}))
	const n = 60
	for i := range n {
		e.enqueue(q, fmt.Sprint(i), queue.WithKey(fmt.Sprint(i%4)))
	}
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		var i int
		fmt.Sscan(j.Payload, &i)
		switch i % 5 {
		case 0:
			return nil
		case 1:
			if j.Attempt < 2 {
				return errBoom
			}
			return nil
		case 2:
			return errBoom // exhausts attempts
		case 3:
			return retry.Permanent(errBoom)
		default:
			panic(i)
		}
	}, queue.Workers(3), queue.MaxAttempts(3))
	for range n {
		recv(e, done, "settled job")
	}
	s := stats(e, q)
	dead := s.DeadLetteredTotal()
	stored := s.Ready + s.InFlight + s.Delayed
	if s.Enqueued != n || s.Acked+dead+uint64(stored) != s.Enqueued || s.Acked != 24 || dead != 36 || s.Dead != 36 {
		e.Errorf("stats %+v: want enqueued = acked(24) + dead(36) + stored(0)", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(final) != n {
		e.Errorf("%d jobs settled, want %d", len(final), n)
	}
	for id, k := range final {
		if k != 1 {
			e.Errorf("job %s settled %d times", id, k)
		}
	}
}

func testStats(e *env) {
	q := e.newQueue()
	e.enqueue(q, "old")
	time.Sleep(3 * e.unit)
	e.enqueue(q, "delayed", queue.WithDelay(10*e.unit))
	s := stats(e, q)
	if s.Ready != 1 || s.Delayed != 1 || s.InFlight != 0 || s.Enqueued != 2 {
		e.Errorf("stats %+v: want 1 ready, 1 delayed", s)
	}
	e.elapsed("lag", s.Lag, 3*e.unit)
	hold := make(chan struct{})
	started := make(chan struct{}, 1)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		started <- struct{}{}
		<-hold
		return nil
	}, queue.Workers(1))
	recv(e, started, "start")
	if s := stats(e, q); s.InFlight != 1 || s.Ready != 0 || s.Delayed != 1 {
		e.Errorf("stats %+v: want 1 in flight, 1 delayed", s)
	}
	close(hold)
}
