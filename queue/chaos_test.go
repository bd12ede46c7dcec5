package queue_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// TestChaosAccounting: random producers and handlers (succeed, fail, fail
// permanently, panic, overrun the lease, run slowly), consumers closed at
// random times with random deadlines (one or two at once), then a final
// consumer drains the rest.
// Every accepted job must be acked or dead-lettered exactly once, no job or
// key may be handled concurrently with itself, and per-key order must hold.
func TestChaosAccounting(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	synctest.Test(t, func(t *testing.T) { chaos(t, seed, time.Second, false) })
}

// The same on the real clock, 50 times faster, so that timers really fire
// concurrently with handlers and settles. Leases are 200ms here: on a
// machine busy enough to hold the renewing goroutine off for longer, the
// backend's lease lapses and the job is delivered again while its first
// handler still runs, which the queue owns up to (ErrLeaseLost, counted in
// BackendErrors). So each start that overlaps a run of its job or key must
// be matched by a lease loss counted; in synctest, where renewals are never
// late, there must be none.
func TestChaosAccountingRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	chaos(t, seed, 20*time.Millisecond, true)
}

const (
	chaosProducers = 3
	chaosJobs      = 60 // per producer
)

type chaosJob struct {
	Producer, Index int
	Key             string
}

// chaos runs the scenario with unit as its second. With lateRenewals, a
// start overlapping a run of its job or key is not a failure by itself:
// there may be as many as the lease losses the queue counted.
func chaos(t *testing.T, seed uint64, unit time.Duration, lateRenewals bool) {
	ms := unit / 1000
	lease := 10 * unit
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var (
		mu       sync.Mutex
		settled  = map[string]int{}
		running  = map[string]int{}
		keyBusy  = map[string]int{}
		lastIdx  = map[string]int{} // key -> enqueue index of the last job started
		accepted = map[string]bool{}
		failures []string
		overlaps []string // starts that overlapped a run of their job or key
	)
	fail := func(format string, args ...any) {
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	settledSignal := make(chan struct{}, 1) // a settle happened since the last look
	note := func(_ context.Context, ev queue.Event) {
		mu.Lock()
		settled[ev.ID]++
		mu.Unlock()
		select {
		case settledSignal <- struct{}{}:
		default:
		}
	}
	q, err := queue.New[chaosJob](context.Background(),
		queue.WithCapacity(40), queue.WithOverflow(queue.Block),
		queue.WithHooks(queue.Hooks{OnSuccess: note, OnDead: note}),
	)
	if err != nil {
		t.Fatal(err)
	}

	// behaviour picks what attempt n of a job does, deterministically.
	behaviour := func(id string, attempt int) int {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s/%d", seed, id, attempt)
		return int(h.Sum64() % 100)
	}
	handler := func(ctx context.Context, j queue.Job[chaosJob]) error {
		mu.Lock()
		running[j.ID]++
		var overlap []string
		if running[j.ID] > 1 {
			overlap = append(overlap, fmt.Sprintf("job %s handled concurrently with itself", j.ID))
		}
		if k := j.Payload.Key; k != "" {
			keyBusy[k]++
			if keyBusy[k] > 1 {
				overlap = append(overlap, fmt.Sprintf("key %s handled concurrently", k))
			}
			if last, ok := lastIdx[k]; ok && j.Payload.Index < last {
				fail("key %s: job %d started after job %d", k, j.Payload.Index, last)
			}
			lastIdx[k] = j.Payload.Index
		}
		if overlap != nil {
			overlaps = append(overlaps, strings.Join(overlap, "; "))
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			running[j.ID]--
			if k := j.Payload.Key; k != "" {
				keyBusy[k]--
			}
			mu.Unlock()
		}()
		b := behaviour(j.ID, j.Attempt)
		switch {
		case b < 45:
			return nil
		case b < 65:
			return errors.New("transient")
		case b < 70:
			return retry.Permanent(errors.New("permanent"))
		case b < 75:
			panic("poison")
		case b < 85: // overrun the lease, then give up shortly after
			<-ctx.Done()
			time.Sleep(200 * ms)
			return ctx.Err()
		default: // slow but within the lease, cancellable
			tm := time.NewTimer(time.Duration(b-80) * 500 * ms)
			defer tm.Stop()
			select {
			case <-tm.C:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
	}

	// Producers: each owns its keys, so its enqueue order is the key order.
	var producers sync.WaitGroup
	for p := range chaosProducers {
		keyless := rng.IntN(3) == 0
		pause := time.Duration(rng.IntN(500)) * ms
		producers.Go(func() {
			for i := range chaosJobs {
				j := chaosJob{Producer: p, Index: i}
				if !keyless || i%2 == 0 {
					j.Key = fmt.Sprintf("p%d-k%d", p, i%3)
				}
				id := fmt.Sprintf("p%d-%d", p, i)
				if _, err := q.Enqueue(context.Background(), j, queue.WithID(id), queue.WithKey(j.Key)); err != nil {
					mu.Lock()
					fail("Enqueue %s: %v", id, err)
					mu.Unlock()
					continue
				}
				mu.Lock()
				accepted[id] = true
				mu.Unlock()
				time.Sleep(pause)
			}
		})
	}

	opts := func() []queue.ConsumerOption {
		return []queue.ConsumerOption{
			queue.WithWorkers(1 + rng.IntN(4)), queue.WithLease(lease), queue.WithMaxAttempts(4),
			queue.WithBackoff(backoff.Constant(time.Duration(rng.IntN(3)) * unit)),
		}
	}
	for round := range 4 {
		// One or two consumers share the queue during a round.
		var cs []*queue.Consumer[chaosJob]
		for range 1 + rng.IntN(2) {
			c, err := q.Consume(context.Background(), handler, opts()...)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		time.Sleep(time.Duration(rng.IntN(20_000)) * ms)
		for i, c := range cs {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(5_000))*ms)
			r, err := c.Close(ctx)
			cancel()
			t.Logf("round %d, consumer %d: report %+v, close error %v", round, i, r, err)
			if r.Abandoned != 0 {
				t.Errorf("round %d: %d handlers abandoned (every chaos handler honours cancellation)", round, r.Abandoned)
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("round %d: Close: %v", round, err)
			}
		}
	}
	// A final consumer drains the rest (and unblocks the producers).
	c, err := q.Consume(context.Background(), handler, opts()...)
	if err != nil {
		t.Fatal(err)
	}
	producers.Wait()
	// Wait, woken by each settle, until every accepted job has settled; the
	// deadline only turns a lost job into a failure instead of a hang.
	giveUp := time.NewTimer(10_000 * unit)
	defer giveUp.Stop()
	for {
		mu.Lock()
		n, want := len(settled), len(accepted)
		mu.Unlock()
		if n >= want {
			break
		}
		select {
		case <-settledSignal:
			continue
		case <-giveUp.C:
			t.Errorf("%d of %d accepted jobs settled after %v", n, want, 10_000*unit)
		}
		break
	}
	if r, err := c.Close(context.Background()); err != nil || r.Abandoned != 0 {
		t.Errorf("final Close: %+v, %v", r, err)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, f := range failures {
		t.Error(f)
	}
	if len(accepted) != chaosProducers*chaosJobs {
		t.Errorf("%d jobs accepted, want %d", len(accepted), chaosProducers*chaosJobs)
	}
	for id := range accepted {
		if settled[id] != 1 {
			t.Errorf("job %s settled %d times, want exactly once", id, settled[id])
		}
	}
	for id := range settled {
		if !accepted[id] {
			t.Errorf("job %s settled but never accepted", id)
		}
	}
	s, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats %+v", s)
	switch {
	case len(overlaps) > 0 && !lateRenewals:
		t.Errorf("%d starts overlapped a run of their job or key: %v", len(overlaps), overlaps)
	case uint64(len(overlaps)) > s.BackendErrors:
		t.Errorf("%d starts overlapped a run of their job or key, %d lease losses counted: %v",
			len(overlaps), s.BackendErrors, overlaps)
	case len(overlaps) > 0:
		t.Logf("%d starts overlapped a run of their job or key after %d lease losses: %v",
			len(overlaps), s.BackendErrors, overlaps)
	}
	dead := s.DeadLetteredTotal()
	if s.Ready+s.InFlight+s.Delayed != 0 || s.Acked+dead != s.Enqueued || uint64(s.Dead) != dead {
		t.Errorf("stats %+v: want nothing stored and enqueued = acked + dead", s)
	}
	n := 0
	for range q.DeadLetters(context.Background()) {
		n++
	}
	if uint64(n) != dead {
		t.Errorf("%d dead letters listed, %d counted", n, dead)
	}
}
