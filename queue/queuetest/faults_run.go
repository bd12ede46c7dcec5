package queuetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/retry"
)

// event is one line of a worker's report, with when the suite read it.
type event struct {
	kind, id, arg string
	worker        int
	at            time.Time
}

// faultRun is one scenario: a queue with a fresh name, the test's own queue on it (the
// producer's, and the view of stats and dead letters), worker processes, and what they
// reported.
type faultRun struct {
	t    testing.TB // the scenario's *testing.T; a recorder in the checks' own tests
	f    Faults
	size faultSize
	name string
	q    *queue.Queue[string]
	ctx  context.Context // ends at the scenario's bound
	// startsOnReceive says the backend records a start as it receives a job
	// (driver.ReceiveStarter): a receive abandoned at its deadline spends an attempt if the
	// server ran it after all.
	startsOnReceive bool

	mu       sync.Mutex // guards the fields below
	workers  []*workerProc
	events   []event
	accepted map[string]bool
	payload  map[string]string
	enqErrs  int // Enqueue calls that failed with ErrUnavailable (retried)
	changed  chan struct{}
}

func newFaultRun(t *testing.T, f Faults, size faultSize) *faultRun {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("F%x", b)
	ctx, cancel := context.WithTimeout(context.Background(), size.limit)
	t.Cleanup(cancel)
	start := time.Now()
	q, release, err := openQueue(f.Open, f.Broker.Addr(), name, f.RecoveryBound(), queue.WithDedupHorizon(faultHorizon))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("FAULTS open: the broker served after %v", d.Round(time.Millisecond))
	}
	t.Cleanup(release)
	r := &faultRun{t: t, f: f, size: size, name: name, q: q, ctx: ctx,
		accepted: map[string]bool{}, payload: map[string]string{}, changed: make(chan struct{}, 1)}
	if be, rel, err := f.Open(f.Broker.Addr(), name); err == nil {
		_, r.startsOnReceive = be.(driver.ReceiveStarter)
		rel()
	}
	t.Cleanup(r.killWorkers)
	return r
}

// openQueue opens the queue name on addr with open's backend, as the scenarios and their
// worker processes do. A scenario may start while the broker still recovers from the one
// before (a restarted cluster node answers CLUSTERDOWN until it has caught up, a failed
// master until its replica took over): an open that fails with ErrUnavailable is retried,
// with backoff, for up to bound; any other error is returned at once. release closes the
// queue, then the backend.
func openQueue(open OpenFunc, addr, name string, bound time.Duration, opts ...queue.Option) (q *queue.Queue[string], release func(), err error) {
	err = untilAvailable(context.Background(), bound, func(ctx context.Context) error {
		be, closeBackend, err := open(addr, name)
		if err != nil {
			return retry.Permanent(fmt.Errorf("open: %w", err))
		}
		q, err = queue.New[string](ctx, append(opts, queue.WithBackend(be))...)
		if err != nil {
			closeBackend()
			return fmt.Errorf("queue.New: %w", err)
		}
		release = func() { _ = q.Close(context.Background()); closeBackend() }
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return q, release, nil
}

// untilAvailable calls f until it returns anything but an error matching ErrUnavailable, with
// backoff, for up to bound or until ctx ends, and returns f's last error: a broker that
// recovers from a fault may still answer "unavailable" for a while (a cluster electing its
// streams' leaders again), as the backend documents, and a caller retries as a producer does.
func untilAvailable(ctx context.Context, bound time.Duration, f func(ctx context.Context) error) error {
	p := retry.New(retry.WithMaxAttempts(math.MaxInt), retry.WithMaxElapsed(bound),
		retry.WithBackoff(backoff.Exponential(100*time.Millisecond, 2, time.Second)),
		retry.WithRetryIf(func(err error) bool { return errors.Is(err, queue.ErrUnavailable) }))
	return retry.Do(ctx, p, f)
}

func (r *faultRun) record(worker int, line string) {
	f := strings.Fields(line)
	if len(f) < 2 {
		r.t.Errorf("worker %d: bad line %q", worker, line)
		return
	}
	e := event{kind: f[0], id: f[1], worker: worker, at: time.Now()}
	if len(f) > 2 {
		e.arg = f[2]
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	r.notify()
}

func (r *faultRun) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// jobID is the ID of job i of a scenario; keyOf its ordering key (a third of the jobs are
// spread over eight keys).
func jobID(i int) string { return fmt.Sprintf("j-%05d", i) }

func keyOf(i int) string {
	if i%3 != 0 {
		return ""
	}
	return fmt.Sprintf("k%d", i%8)
}

// produce enqueues jobs 0 to n-1 with payload(i), one every gap, retrying an Enqueue that
// failed with ErrUnavailable with the same ID (an ErrDuplicate then means the job was stored).
// It returns once every job is accepted, or with a test error at the scenario's bound. It runs
// on a goroutine of its own (startProducer) or on the test's.
func (r *faultRun) produce(n int, gap time.Duration, payload func(i int) string) {
	r.produceRange(0, n, gap, payload)
}

// produceRange is produce for jobs from to to-1.
func (r *faultRun) produceRange(from, to int, gap time.Duration, payload func(i int) string) {
	for i := from; i < to; i++ {
		id, p := jobID(i), payload(i)
		r.mu.Lock()
		r.payload[id] = p
		r.mu.Unlock()
		opts := []queue.EnqueueOption{queue.WithID(id)}
		if k := keyOf(i); k != "" {
			opts = append(opts, queue.WithKey(k))
		}
		retried := false
		for {
			ctx, cancel := context.WithTimeout(r.ctx, 10*r.f.CallTimeout)
			_, err := r.q.Enqueue(ctx, p, opts...)
			cancel()
			if err == nil || retried && errors.Is(err, queue.ErrDuplicate) {
				break
			}
			if r.ctx.Err() != nil {
				r.t.Errorf("producer: job %s not accepted within the scenario's bound: %v", id, err)
				return
			}
			if !errors.Is(err, queue.ErrUnavailable) {
				r.t.Errorf("producer: Enqueue(%s): %v, want nil or an error matching ErrUnavailable", id, err)
				return
			}
			r.mu.Lock()
			r.enqErrs++
			r.mu.Unlock()
			retried = true
			time.Sleep(50 * time.Millisecond) // a retry pace, not a synchronisation
		}
		r.mu.Lock()
		r.accepted[id] = true
		r.mu.Unlock()
		if gap > 0 {
			time.Sleep(gap)
		}
	}
}

// startProducer runs produce on a goroutine, waited for at the end of the test (and by the
// returned channel, closed when it returns).
func (r *faultRun) startProducer(n int, gap time.Duration, payload func(i int) string) <-chan struct{} {
	return r.startProducerAfter(nil, 0, n, gap, payload)
}

// startProducerAfter is startProducer for jobs from to to-1, once before is closed (if not
// nil): after another producer, so that jobs are enqueued in the order of their numbers.
func (r *faultRun) startProducerAfter(before <-chan struct{}, from, to int, gap time.Duration, payload func(i int) string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if before != nil {
			<-before
		}
		r.produceRange(from, to, gap, payload)
	}()
	r.t.Cleanup(func() { <-done })
	return done
}

// waitFor waits until cond holds (checked on every report and every 100ms), failing the test
// at the scenario's bound with what.
func (r *faultRun) waitFor(what string, cond func() bool) {
	r.t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-r.changed:
		case <-tick.C:
		case <-r.ctx.Done():
			r.t.Fatalf("timed out waiting for %s\n%s", what, r.diagnosis())
		}
	}
}

// diagnosis describes what is left: the stats, the workers, and the events of the jobs not
// reported settled (at most 20 of them).
func (r *faultRun) diagnosis() string {
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.f.CallTimeout)
	defer cancel()
	s, err := r.q.Stats(ctx)
	fmt.Fprintf(&b, "stats %+v (%v)\n", s, err)
	if d, ok := r.f.Broker.(Describer); ok {
		fmt.Fprintf(&b, "broker: %s\n", d.Describe(r.name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, w := range r.workers {
		state := "running"
		select {
		case <-w.done:
			state = fmt.Sprint("exited: ", w.err)
		default:
		}
		fmt.Fprintf(&b, "worker %d: %s\n", i, state)
	}
	byID := map[string][]string{}
	done := map[string]bool{}
	for _, e := range r.events {
		byID[e.id] = append(byID[e.id], fmt.Sprintf("%d:%s%s", e.worker, e.kind, e.arg))
		if e.kind == "A" || e.kind == "D" {
			done[e.id] = true
		}
	}
	var left []string
	for id := range r.accepted {
		if !done[id] {
			left = append(left, id)
		}
	}
	slices.Sort(left)
	fmt.Fprintf(&b, "%d of %d accepted jobs not reported settled\n", len(left), len(r.accepted))
	for _, id := range left[:min(len(left), 20)] {
		fmt.Fprintf(&b, "  %s (%s): %v\n", id, r.payload[id], byID[id])
	}
	return b.String()
}

// settledCount returns how many distinct jobs were reported acked or dead-lettered.
func (r *faultRun) settledCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	done := map[string]bool{}
	for _, e := range r.events {
		if e.kind == "A" || e.kind == "D" {
			done[e.id] = true
		}
	}
	return len(done)
}

// drained waits until the backend stores nothing and every accepted job was reported settled
// (or handled by a worker that was killed, which may have acked it without reporting).
func (r *faultRun) drained(n int) {
	r.t.Helper()
	last := time.Time{}
	r.waitFor("every job settled", func() bool {
		if time.Since(last) < 500*time.Millisecond {
			return false
		}
		last = time.Now()
		r.mu.Lock()
		all := len(r.accepted) == n
		r.mu.Unlock()
		if !all {
			return false
		}
		s, err := r.q.Stats(r.ctx)
		return err == nil && s.Ready+s.InFlight+s.Delayed == 0
	})
}

// ackAfter returns the time of the first ack reported after t, waiting for it.
func (r *faultRun) ackAfter(t time.Time) time.Duration {
	var got time.Time
	r.waitFor("an ack after the fault", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range r.events {
			if e.kind == "A" && e.at.After(t) && (got.IsZero() || e.at.Before(got)) {
				got = e.at
			}
		}
		return !got.IsZero()
	})
	return got.Sub(t)
}

// recovered measures and checks the time from t, the end of a fault, to the next ack.
func (r *faultRun) recovered(what string, t time.Time) time.Duration {
	d := r.ackAfter(t)
	if bound := r.f.RecoveryBound(); d > bound {
		r.t.Errorf("%s: recovered after %v, beyond the bound %v (%s)", what, d, bound, r.startsBetween(t, t.Add(d)))
	}
	return d
}

// startsBetween says how many handler runs started from t to end, and when the first did: a
// recovery that found jobs to run but could not settle them, or found none. The workers'
// warnings (their standard error) are logged once they exit, when the test has failed.
func (r *faultRun) startsBetween(t, end time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, first := 0, time.Time{}
	for _, e := range r.events {
		if e.kind == "S" && !e.at.Before(t) && e.at.Before(end) {
			n++
			if first.IsZero() || e.at.Before(first) {
				first = e.at
			}
		}
	}
	after := first.Sub(t).Round(time.Millisecond)
	switch n {
	case 0:
		return "no handler run started meanwhile"
	case 1:
		return fmt.Sprintf("1 handler run started meanwhile, after %v", after)
	}
	return fmt.Sprintf("%d handler runs started meanwhile, the first after %v", n, after)
}

// outage checks, with the only server down, that the queue says so: Stats fails with
// ErrUnavailable within the call timeout (and a little more), and Health is unreachable, with
// the error.
func (r *faultRun) outage() {
	r.t.Helper()
	start := time.Now()
	_, err := r.q.Stats(r.ctx)
	if took := time.Since(start); !errors.Is(err, queue.ErrUnavailable) || took > 2*r.f.CallTimeout+time.Second {
		r.t.Errorf("Stats with the server down: %v after %v, want ErrUnavailable within the call timeout %v", err, took, r.f.CallTimeout)
	}
	if h := r.q.Health(); h.Reachable || !errors.Is(h.LastError, queue.ErrUnavailable) {
		r.t.Errorf("health with the server down %+v: want unreachable, with the outage's error", h)
	}
}

// healthy checks that the queue is reachable again once a call got an answer.
func (r *faultRun) healthy() {
	r.t.Helper()
	r.waitFor("the queue reachable again", func() bool {
		_, err := r.q.Stats(r.ctx)
		return err == nil && r.q.Health().Reachable
	})
}
