package queuetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

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
	}, queue.WithWorkers(4), queue.WithLease(lease), queue.WithBackoff(backoff.Constant(0)))
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
	// WithLease: a handler is cancelled once it has run for the lease, and up to the
	// consumer's look interval (lease/16, between 100µs and 10ms) later; which look first
	// sees the handler running depends on the goroutines' order at its start.
	look := min(max(lease/16, 100*time.Microsecond), 10*time.Millisecond)
	e.elapsedLate("redelivery", starts[1], lease+2*e.unit, look)
}

// received is what a Receive in its own goroutine got.
type received struct {
	d  *driver.Delivery
	at time.Time
}

// testBackendLeaseExpiry drives the backend alone: a job received, started
// and never settled (its consumer died mid-handler) is delivered again when
// the backend's lease ends, to a receiver that was already waiting, as
// attempt 2; the stale delivery can no longer be renewed, acked or nacked.
func testBackendLeaseExpiry(e *env) {
	b := e.openBackend(driver.Config{})
	lease := 5 * e.unit
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	got := make(chan received, 2)
	for range 2 {
		wg.Go(func() {
			var d driver.Delivery
			if err := b.Receive(ctx, lease, &d); err == nil {
				got <- received{&d, time.Now()}
			}
		})
	}
	e.receiversWait()   // both receivers wait
	start := time.Now() // no delivery before this, so a lower bound of the lease's start
	if _, err := b.Enqueue(context.Background(), driver.Message{ID: "J", Body: []byte("j"), Value: "j"}); err != nil {
		e.Fatalf("Enqueue: %v", err)
	}
	first := recv(e, got, "first delivery")
	if first.d.ID != "J" || first.d.Attempt != 1 || first.d.Redelivered {
		e.Errorf("first delivery %+v: want J, attempt 1, not redelivered", first.d)
	}
	// A handler starts on it, and its process dies.
	if err := b.Start(context.Background(), first.d); err != nil {
		e.Fatalf("Start: %v", err)
	}
	second := recv(e, got, "redelivery after the lease")
	e.elapsed("redelivery", second.at.Sub(start), lease)
	if second.d.ID != "J" || second.d.Attempt != 2 || !second.d.Redelivered {
		e.Errorf("second delivery %+v: want J, attempt 2, redelivered", second.d)
	}
	checkStale(e, b, first.d, lease)
	if err := b.Ack(context.Background(), second.d); err != nil {
		e.Errorf("Ack of the current delivery: %v", err)
	}
	checkEmpty(e, b)
}

// checkStale checks that the stale delivery d, whose lease ended, can no longer be renewed,
// acked or nacked: each fails with ErrLeaseLost.
func checkStale(e *env, b driver.Backend, d *driver.Delivery, lease time.Duration) {
	e.Helper()
	bg := context.Background()
	if err := b.Extend(bg, d, lease); !errors.Is(err, queue.ErrLeaseLost) {
		e.Errorf("Extend of the stale delivery: %v, want ErrLeaseLost", err)
	}
	if err := b.Ack(bg, d); !errors.Is(err, queue.ErrLeaseLost) {
		e.Errorf("Ack of the stale delivery: %v, want ErrLeaseLost", err)
	}
	if err := b.Nack(bg, d, 0, queue.Attempt{Number: 1, Error: "stale"}); !errors.Is(err, queue.ErrLeaseLost) {
		e.Errorf("Nack of the stale delivery: %v, want ErrLeaseLost", err)
	}
}

// checkEmpty checks that backend b stores no job: none ready, in flight or delayed.
func checkEmpty(e *env, b driver.Backend) {
	e.Helper()
	if st, err := b.Stats(context.Background()); err != nil || st.Ready != 0 || st.InFlight != 0 || st.Delayed != 0 {
		e.Errorf("stats %+v, %v: want an empty backend", st, err)
	}
}

// testUnstartedLeaseExpiry drives the backend alone: a job received but never started (prefetched
// by a consumer that died before a handler took it) comes back when its lease ends with its attempt
// unspent; a job started on its second delivery is then attempt 1, and after its lease ends,
// attempt 2.
func testUnstartedLeaseExpiry(e *env) {
	b := e.openBackend(driver.Config{})
	lease := 3 * e.unit
	bg := context.Background()
	if _, err := b.Enqueue(bg, driver.Message{ID: "U", Body: []byte("u"), Value: "u"}); err != nil {
		e.Fatalf("Enqueue: %v", err)
	}
	receive := func(what string) *driver.Delivery {
		e.Helper()
		ctx, cancel := context.WithTimeout(bg, e.timeout())
		defer cancel()
		var d driver.Delivery
		if err := b.Receive(ctx, lease, &d); err != nil {
			e.Fatalf("Receive (%s): %v", what, err)
		}
		return &d
	}
	d1 := receive("first")
	if d1.ID != "U" || d1.Attempt != 1 {
		e.Fatalf("first delivery %+v: want U, attempt 1", d1)
	}
	d2 := receive("after the unstarted lease") // d1's lease ends unstarted
	if d2.ID != "U" || d2.Attempt != 1 {
		e.Fatalf("delivery after an unstarted lease %+v: want U, attempt 1", d2)
	}
	if err := b.Start(bg, d2); err != nil {
		e.Fatalf("Start: %v", err)
	}
	d3 := receive("after the started lease")
	if d3.ID != "U" || d3.Attempt != 2 {
		e.Fatalf("delivery after a started lease %+v: want U, attempt 2", d3)
	}
	if err := b.Ack(bg, d3); err != nil {
		e.Errorf("Ack: %v", err)
	}
}
