package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// A queue in memory, bounded, that refuses work when full and remembers job IDs for an hour.
// Close it when done: that closes its consumers and its backend.
func ExampleNew() {
	ctx := context.Background()
	q, err := queue.New[string](ctx,
		queue.WithCapacity(2), queue.WithOverflow(queue.Reject), queue.WithDedupHorizon(time.Hour))
	if err != nil {
		panic(err) // the backend could not be opened (never, in memory)
	}
	defer q.Close(ctx)

	for _, p := range []string{"a", "b", "c"} {
		_, err := q.Enqueue(ctx, p, queue.WithID("job-"+p))
		fmt.Printf("enqueue %s: %v\n", p, err)
	}
	// Output:
	// enqueue a: <nil>
	// enqueue b: <nil>
	// enqueue c: queue: full
}

// Enqueue takes options per job: an ID (the deduplication key), an ordering key, a delay. An
// ID that is taken is refused with ErrDuplicate, and the earlier job stands.
func ExampleQueue_Enqueue() {
	ctx := context.Background()
	q, _ := queue.New[string](ctx)
	defer q.Close(ctx)

	id, err := q.Enqueue(ctx, "charge order 7", queue.WithID("charge-7"), queue.WithKey("customer-42"))
	fmt.Println(id, err)
	_, err = q.Enqueue(ctx, "charge order 7 again", queue.WithID("charge-7"))
	fmt.Println(errors.Is(err, queue.ErrDuplicate))
	_, err = q.Enqueue(ctx, "send the receipt", queue.WithKey("customer-42"), queue.WithDelay(time.Minute))
	fmt.Println(err)

	s, _ := q.Stats(ctx)
	fmt.Printf("ready %d, delayed %d\n", s.Ready, s.Delayed)
	// Output:
	// charge-7 <nil>
	// true
	// <nil>
	// ready 1, delayed 1
}

// Consume runs a handler on a bounded number of workers: nil acks, an error retries after the
// backoff, retry.Permanent dead-letters at once. Drain works off what is left, then closes.
func ExampleQueue_Consume() {
	ctx := context.Background()
	q, _ := queue.New[string](ctx)
	defer q.Close(ctx)
	for _, p := range []string{"ok", "flaky", "broken"} {
		_, _ = q.Enqueue(ctx, p, queue.WithID(p))
	}

	var mu sync.Mutex
	var runs []string
	c, err := q.Consume(ctx, func(ctx context.Context, job queue.Job[string]) error {
		mu.Lock()
		runs = append(runs, fmt.Sprintf("%s#%d", job.Payload, job.Attempt))
		mu.Unlock()
		switch {
		case job.Payload == "flaky" && job.Attempt == 1:
			return errors.New("timeout") // retried after the backoff
		case job.Payload == "broken":
			return retry.Permanent(errors.New("bad input")) // dead-lettered now
		}
		return nil
	}, queue.WithWorkers(4), queue.WithMaxAttempts(5), queue.WithLease(time.Minute),
		queue.WithBackoff(backoff.Constant(10*time.Millisecond)))
	if err != nil {
		panic(err)
	}
	if _, err := c.Drain(ctx); err != nil {
		panic(err)
	}
	slices.Sort(runs)
	fmt.Println(runs)
	// Output: [broken#1 flaky#1 flaky#2 ok#1]
}

// Drain works off the whole backlog before the consumer closes, the delayed job included, so
// that nothing is left in the in-memory queue, which would be lost with the process. Its ctx
// bounds how long that may take.
func ExampleConsumer_Drain() {
	ctx := context.Background()
	q, _ := queue.New[string](ctx)
	defer q.Close(ctx)
	_, _ = q.Enqueue(ctx, "now")
	_, _ = q.Enqueue(ctx, "soon", queue.WithDelay(20*time.Millisecond))

	c, _ := q.Consume(ctx, func(ctx context.Context, job queue.Job[string]) error { return nil })

	// On SIGTERM, say: five seconds to finish what was accepted.
	shutdown, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := c.Drain(shutdown)
	s, _ := q.Stats(ctx)
	fmt.Printf("drain: %v; acked %d, left %d\n", err, s.Acked, s.Ready+s.Delayed+s.InFlight)
	_, err = c.Close(ctx)
	fmt.Println("close after drain:", err)
	// Output:
	// drain: <nil>; acked 2, left 0
	// close after drain: queue: closed
}

// deadLetterOne returns a queue holding one dead letter, "order-7", whose handler failed for
// good, and the handler's fix.
func deadLetterOne(ctx context.Context) (q *queue.Queue[string], fix func()) {
	q, _ = queue.New[string](ctx)
	var mu sync.Mutex
	fixed := false
	c, _ := q.Consume(ctx, func(ctx context.Context, job queue.Job[string]) error {
		mu.Lock()
		defer mu.Unlock()
		if !fixed {
			return retry.Permanent(errors.New("cannot parse " + job.Payload))
		}
		return nil
	})
	_, _ = q.Enqueue(ctx, "{bad json", queue.WithID("order-7"))
	_, _ = c.Drain(ctx)
	return q, func() { mu.Lock(); fixed = true; mu.Unlock() }
}

// DeadLetters lists the jobs that will not be retried, oldest first, with the reason and every
// attempt.
func ExampleQueue_DeadLetters() {
	ctx := context.Background()
	q, _ := deadLetterOne(ctx)
	defer q.Close(ctx)
	for dl, err := range q.DeadLetters(ctx) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s (%q): %s\n", dl.Job.ID, dl.Job.Payload, dl.Reason)
		for _, a := range dl.History {
			fmt.Printf("  attempt %d: %s\n", a.Number, a.Error)
		}
	}
	// Output:
	// order-7 ("{bad json"): permanent
	//   attempt 1: cannot parse {bad json
}

// Once the bug is fixed, Redrive puts a dead letter back as a new job, with a fresh attempt
// count.
func ExampleQueue_Redrive() {
	ctx := context.Background()
	q, fix := deadLetterOne(ctx)
	defer q.Close(ctx)
	fix()
	if err := q.Redrive(ctx, "order-7"); err != nil {
		panic(err)
	}
	fmt.Println("again:", q.Redrive(ctx, "order-7"))
	c, _ := q.Consume(ctx, func(ctx context.Context, job queue.Job[string]) error {
		fmt.Println("handled", job.ID, "attempt", job.Attempt)
		return nil
	})
	_, _ = c.Drain(ctx)
	s, _ := q.Stats(ctx)
	fmt.Println("acked", s.Acked, "dead letters", s.Dead)
	// Output:
	// again: queue: no such dead letter
	// handled order-7 attempt 1
	// acked 1 dead letters 0
}

// Purge deletes a dead letter that can never succeed. Stats' Dead is a gauge (the dead letters
// kept now); DeadLettered a counter (the jobs that died), which a purge does not change.
func ExampleQueue_Purge() {
	ctx := context.Background()
	q, _ := deadLetterOne(ctx)
	defer q.Close(ctx)
	if err := q.Purge(ctx, "order-7"); err != nil {
		panic(err)
	}
	s, _ := q.Stats(ctx)
	fmt.Println("dead letters kept:", s.Dead, "dead-lettered so far:", s.DeadLetteredTotal())
	fmt.Println("again:", q.Purge(ctx, "order-7"))
	// Output:
	// dead letters kept: 0 dead-lettered so far: 1
	// again: queue: no such dead letter
}

// Stats is a snapshot: gauges of what the backend stores now, and this process's counters.
func ExampleQueue_Stats() {
	ctx := context.Background()
	q, _ := queue.New[string](ctx)
	defer q.Close(ctx)
	_, _ = q.Enqueue(ctx, "a", queue.WithID("a"))
	_, _ = q.Enqueue(ctx, "a", queue.WithID("a"))
	_, _ = q.Enqueue(ctx, "b", queue.WithDelay(time.Hour))

	s, err := q.Stats(ctx)
	if err != nil {
		panic(err) // a broker backend out of reach: the counters are still there
	}
	fmt.Printf("now: ready %d, in flight %d, delayed %d, dead letters %d\n", s.Ready, s.InFlight, s.Delayed, s.Dead)
	fmt.Printf("so far: enqueued %d, duplicates %d, acked %d\n", s.Enqueued, s.Duplicates, s.Acked)
	fmt.Println("backend reachable:", s.Health.Reachable)
	// Output:
	// now: ready 1, in flight 0, delayed 1, dead letters 0
	// so far: enqueued 2, duplicates 1, acked 0
	// backend reachable: true
}

// Hooks log every job event with one slog call each: an Event is a slog.LogValuer, and each
// hook gets the context of the work it reports on (here, the handler's), for the logger's
// handler to read trace IDs from.
func ExampleHooks() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			// Times and durations vary from run to run: leave them out here.
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{}
			}
			return a
		},
	}))
	ctx := context.Background()
	q, _ := queue.New[string](ctx, queue.WithHooks(queue.Hooks{
		OnEnqueue: func(ctx context.Context, e queue.Event) { logger.InfoContext(ctx, "job enqueued", "job", e) },
		OnSuccess: func(ctx context.Context, e queue.Event) { logger.InfoContext(ctx, "job acked", "job", e) },
		OnDead:    func(ctx context.Context, e queue.Event) { logger.ErrorContext(ctx, "job dead", "job", e) },
	}))
	defer q.Close(ctx)
	_, _ = q.Enqueue(ctx, "ada@example.com", queue.WithID("mail-1"))
	_, _ = q.Enqueue(ctx, "", queue.WithID("mail-2"))

	c, _ := q.Consume(ctx, func(ctx context.Context, job queue.Job[string]) error {
		if job.Payload == "" {
			return retry.Permanent(errors.New("no address"))
		}
		return nil
	}, queue.WithWorkers(1))
	_, _ = c.Drain(ctx)
	// Output:
	// level=INFO msg="job enqueued" job.id=mail-1
	// level=INFO msg="job enqueued" job.id=mail-2
	// level=INFO msg="job acked" job.id=mail-1 job.attempt=1
	// level=ERROR msg="job dead" job.id=mail-2 job.attempt=1 job.err="no address" job.reason=permanent
}
