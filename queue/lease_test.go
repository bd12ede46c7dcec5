package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
	"github.com/corral-go/corral/retry"
)

// A handler cancelled by its lease gets ErrLeaseExpired once it has run for
// its lease, and at most the keeper's sampling interval (lease/16) later;
// the next job on the same worker starts with a live ctx: the expiry of one
// job never reaches the next.
func TestLeaseExpiryDoesNotReachNextJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string](context.Background())
		type result struct {
			job     string
			cause   error
			elapsed time.Duration
		}
		results := make(chan result, 10)
		const lease = 10 * time.Millisecond
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			start := time.Now()
			if j.Payload[0] == 's' { // slow: runs until its lease ends
				<-ctx.Done()
			}
			results <- result{j.Payload, context.Cause(ctx), time.Since(start)}
			return nil
		}, WithWorkers(1), WithLease(lease))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			enqueueOK(t, q, fmt.Sprint("slow", i))
			enqueueOK(t, q, fmt.Sprint("fast", i))
		}
		for i := range 10 {
			r := <-results
			want := fmt.Sprint("slow", i/2)
			if i%2 == 1 {
				want = fmt.Sprint("fast", i/2)
			}
			switch {
			case r.job != want:
				t.Fatalf("job %d is %s, want %s", i, r.job, want)
			case i%2 == 0 && (!errors.Is(r.cause, ErrLeaseExpired) || r.elapsed < lease || r.elapsed > lease+lease/16):
				t.Errorf("%s: cause %v after %v, want ErrLeaseExpired after 10ms to 10.625ms", r.job, r.cause, r.elapsed)
			case i%2 == 1 && r.cause != nil:
				t.Errorf("%s: ctx cancelled (%v) when it started", r.job, r.cause)
			}
		}
		synctest.Wait() // the last handler has sent its result: let it settle
		rep, err := c.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s, _ := q.Stats(context.Background())
		if s.Acked != 10 || rep != (Report{}) {
			t.Fatalf("acked %d, report %+v; want 10 acked before Close", s.Acked, rep)
		}
	})
}

// The keeper reads a worker's delivery to renew its lease while the worker
// races from job to job without a lock: with a lease of a few hundred
// microseconds it renews constantly. Run with -race, which reports a keeper
// reading a delivery the worker is already replacing. Every job is acked
// once, whatever the renewals and expiries did.
func TestLeaseRenewalRacesJobEnd(t *testing.T) {
	const jobs = 20000
	q, _ := New[int](context.Background())
	var handled atomic.Int64
	done := make(chan struct{})
	c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[int]) error {
		if handled.Add(1) == jobs {
			close(done)
		}
		return nil
	}, WithWorkers(4), WithLease(300*time.Microsecond), WithMaxAttempts(1000))
	if err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		if _, err := q.Enqueue(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	if _, err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, _ := q.Stats(context.Background())
	// A renewal later than the backend lease (450µs) on a loaded machine
	// lets a job be delivered again: it may still be waiting.
	if s.Acked+uint64(s.Ready) != jobs || s.InFlight+s.Delayed+s.Dead != 0 {
		t.Fatalf("stats %+v: want %d acked or ready, nothing else", s, jobs)
	}
}

// A job a worker takes as it acks the previous one starts at the keeper's
// reading of the clock, not its own: the reading is at most the keeper's
// sampling interval old (10ms with the default lease), never in the future.
// Checked on the start times of dead-lettered attempts, each taken with the
// ack of a job before it, against the times the handlers saw, with handlers
// taking 3ms each: a keeper that stopped reading the clock would leave the
// starts ever further behind.
func TestBackToBackJobStartsAtKeepersClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const pairs = 20
		dead := make(chan struct{}, pairs)
		q, _ := New[string](context.Background(), WithHooks(Hooks{OnDead: func(context.Context, Event) { dead <- struct{}{} }}))
		var mu sync.Mutex
		started := map[string]time.Time{}
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			mu.Lock()
			started[j.ID] = time.Now()
			mu.Unlock()
			time.Sleep(3 * time.Millisecond)
			if j.Payload == "dead" {
				return retry.Permanent(errors.New("dead on purpose"))
			}
			return nil
		}, WithWorkers(1))
		if err != nil {
			t.Fatal(err)
		}
		for range pairs {
			enqueueOK(t, q, "ok")
			enqueueOK(t, q, "dead")
		}
		for range pairs {
			<-dead
		}
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		n := 0
		for dl, err := range q.DeadLetters(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			want := started[dl.Job.ID]
			if len(dl.History) != 1 {
				t.Fatalf("job %s: history %+v, want one attempt", dl.Job.ID, dl.History)
			}
			if got := dl.History[0].Start; got.After(want) || want.Sub(got) > 10*time.Millisecond {
				t.Errorf("job %s started at %v, its attempt says %v: want at most 10ms earlier", dl.Job.ID, want, got)
			}
		}
		if n != pairs {
			t.Fatalf("%d dead letters, want %d", n, pairs)
		}
	})
}

// The keeper parks while no handler runs, and drops its clock reading
// then: the first job after a long idle spell must not start at a reading
// from before it. Once a handler starts, the keeper is back with a fresh
// reading.
func TestKeeperParksAndDropsItsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New[string](context.Background())
		release := make(chan struct{})
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			switch j.Payload {
			case "hold":
				<-release
			case "quick":
				time.Sleep(time.Millisecond) // long enough for the keeper to see it
			}
			return nil
		}, WithWorkers(1))
		if err != nil {
			t.Fatal(err)
		}
		enqueueOK(t, q, "quick")
		// The keeper parks at its first look after the handler returned.
		time.Sleep(time.Hour)
		if got, ok := c.keeper.Now(); ok {
			t.Errorf("idle consumer: keeper's clock %v; want it parked without a clock", got)
		}
		enqueueOK(t, q, "hold")
		synctest.Wait()
		if got, ok := c.keeper.Now(); !ok || !got.Equal(time.Now()) {
			t.Errorf("keeper's clock %v (%v) while a handler runs, want %v", got, ok, time.Now())
		}
		close(release)
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// slowExtend is a backend whose renewals take a second (a broker far away).
type slowExtend struct{ *memory.Backend }

func (b slowExtend) Extend(ctx context.Context, d *driver.Delivery, lease time.Duration) error {
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return b.Backend.Extend(ctx, d, lease)
}

// A handler's deadline does not wait for the renewals of the backend
// leases: with renewals that take a second, a handler with a 10ms lease is
// still cancelled within 10.625ms.
func TestSlowRenewalsDoNotDelayExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := New[string](context.Background(), WithBackend(slowExtend{memory.New()}))
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			cause   error
			elapsed time.Duration
		}
		got := make(chan result, 1)
		const lease = 10 * time.Millisecond
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			start := time.Now()
			<-ctx.Done()
			got <- result{context.Cause(ctx), time.Since(start)}
			return nil
		}, WithWorkers(1), WithLease(lease))
		if err != nil {
			t.Fatal(err)
		}
		enqueueOK(t, q, "x")
		r := <-got
		if !errors.Is(r.cause, ErrLeaseExpired) || r.elapsed < lease || r.elapsed > lease+lease/16 {
			t.Errorf("cause %v after %v; want ErrLeaseExpired after 10ms to 10.625ms", r.cause, r.elapsed)
		}
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
