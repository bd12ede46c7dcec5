package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/latency"
	"github.com/corral-go/corral/queue"
)

// Enqueue jobs, handle them on two workers, and ack by returning nil.
func Example() {
	ctx := context.Background()
	q, err := queue.New[string](ctx)
	if err != nil {
		panic(err)
	}
	defer q.Close(ctx)
	for _, name := range []string{"ada", "grace", "ken"} {
		if _, err := q.Enqueue(ctx, name, queue.WithID("greet-"+name)); err != nil {
			panic(err)
		}
	}

	var mu sync.Mutex
	greeted := map[string]bool{}
	done := make(chan struct{}, 3)
	c, err := q.Consume(ctx, func(ctx context.Context, job queue.Job[string]) error {
		mu.Lock()
		greeted[job.Payload] = true
		mu.Unlock()
		done <- struct{}{}
		return nil // ack
	}, queue.WithWorkers(2))
	if err != nil {
		panic(err)
	}
	for range 3 {
		<-done
	}
	if _, err := c.Close(ctx); err != nil {
		panic(err)
	}
	s, _ := q.Stats(ctx)
	fmt.Println("greeted:", len(greeted), "acked:", s.Acked, "left:", s.Ready+s.InFlight+s.Delayed)
	// Output: greeted: 3 acked: 3 left: 0
}

// A poison job panics in its handler: it goes to the dead letters with the
// reason and its history. Once the bug is fixed it is redriven and handled.
func Example_deadLetters() {
	ctx := context.Background()
	dead := make(chan string, 1)
	acked := make(chan string, 1)
	q, _ := queue.New[string](context.Background(), queue.WithHooks(queue.Hooks{
		OnDead:    func(_ context.Context, e queue.Event) { dead <- e.ID },
		OnSuccess: func(_ context.Context, e queue.Event) { acked <- e.ID },
	}))
	defer q.Close(ctx)
	var fixed sync.Mutex // held while the handler is buggy
	buggy := true
	handle := func(ctx context.Context, job queue.Job[string]) error {
		fixed.Lock()
		defer fixed.Unlock()
		if buggy {
			panic("cannot parse " + job.Payload)
		}
		return nil
	}
	c, _ := q.Consume(ctx, handle, queue.WithWorkers(1))
	_, _ = q.Enqueue(ctx, "{bad json", queue.WithID("order-7"))
	<-dead

	for dl := range q.DeadLetters(ctx) {
		fmt.Printf("%s: %s after %d attempt(s), payload %q\n", dl.Job.ID, dl.Reason, dl.Job.Attempt, dl.Job.Payload)
	}

	fixed.Lock()
	buggy = false
	fixed.Unlock()
	if err := q.Redrive(ctx, "order-7"); err != nil {
		panic(err)
	}
	fmt.Println("acked after redrive:", <-acked)
	_, _ = c.Close(ctx)
	s, _ := q.Stats(ctx)
	fmt.Println("dead letters left:", s.Dead)
	// Output:
	// order-7: panic after 1 attempt(s), payload "{bad json"
	// acked after redrive: order-7
	// dead letters left: 0
}

// Jobs with the same ordering key are handled one at a time, in enqueue
// order, even when one of them fails and is retried; other keys proceed in
// parallel.
func Example_orderingKey() {
	ctx := context.Background()
	var mu sync.Mutex
	var log []string
	done := make(chan struct{}, 3)
	q, _ := queue.New[string](ctx, queue.WithHooks(queue.Hooks{OnSuccess: func(context.Context, queue.Event) { done <- struct{}{} }}))
	defer q.Close(ctx)
	for _, step := range []string{"created", "paid", "shipped"} {
		_, _ = q.Enqueue(ctx, step, queue.WithKey("order-42"))
	}
	c, _ := q.Consume(ctx, func(ctx context.Context, job queue.Job[string]) error {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, fmt.Sprintf("%s (attempt %d)", job.Payload, job.Attempt))
		if job.Payload == "paid" && job.Attempt == 1 {
			return errors.New("payment service unavailable")
		}
		return nil
	}, queue.WithWorkers(4), queue.WithBackoff(backoff.Constant(10*time.Millisecond)))
	for range 3 {
		<-done
	}
	_, _ = c.Close(ctx)
	for _, l := range log {
		fmt.Println(l)
	}
	// Output:
	// created (attempt 1)
	// paid (attempt 1)
	// paid (attempt 2)
	// shipped (attempt 1)
}

// Close stops taking jobs, waits for the running handlers, and at its
// deadline cancels them, waits for them to return, and reports what it did.
// Jobs it did not finish stay in the queue for the next consumer.
func ExampleConsumer_Close() {
	ctx := context.Background()
	q, _ := queue.New[int](ctx)
	defer q.Close(ctx)
	for i := range 5 {
		_, _ = q.Enqueue(ctx, i, queue.WithKey("one-at-a-time"))
	}
	started := make(chan struct{})
	c, _ := q.Consume(ctx, func(ctx context.Context, job queue.Job[int]) error {
		close(started)
		<-ctx.Done() // a long job: runs until Close gives up on it
		return context.Cause(ctx)
	}, queue.WithWorkers(2))
	<-started

	deadline, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	report, err := c.Close(deadline)
	fmt.Printf("%+v\n%v\n", report, err)

	s, _ := q.Stats(ctx)
	fmt.Println("still queued:", s.Ready)
	// Output:
	// {Acked:0 Returned:1 DeadLettered:0 Abandoned:0}
	// context deadline exceeded
	// still queued: 5
}

// Stats reads the distributions of this process's handler runs: the
// percentiles of the wait (enqueued to started), the run and the two
// together. (Histograms of several processes add up with Merge.)
func ExampleStats_latency() {
	ctx := context.Background()
	q, err := queue.New[int](ctx, queue.WithTimings())
	if err != nil {
		panic(err)
	}
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[int]) error {
		time.Sleep(time.Duration(j.Payload) * time.Millisecond)
		return nil
	}, queue.WithWorkers(4))
	if err != nil {
		panic(err)
	}
	for i := range 20 {
		if _, err := q.Enqueue(ctx, i%5); err != nil {
			panic(err)
		}
	}
	if _, err := c.Drain(ctx); err != nil {
		panic(err)
	}
	s, _ := q.Stats(ctx)
	for _, d := range []struct {
		name string
		h    latency.Histogram
	}{{"wait", s.Wait}, {"run", s.Run}, {"end to end", s.EndToEnd}} {
		p50, p95, p99 := d.h.Quantile(0.5), d.h.Quantile(0.95), d.h.Quantile(0.99)
		fmt.Println(d.name, d.h.Count, p50 <= p95 && p95 <= p99 && p99 <= d.h.Max)
	}
	// The longest handlers sleep 4ms: the slowest runs are at least that.
	fmt.Println(s.Run.Quantile(0.99) >= 4*time.Millisecond-4*time.Millisecond/16)
	// Output:
	// wait 20 true
	// run 20 true
	// end to end 20 true
	// true
}
