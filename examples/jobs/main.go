// Command jobs runs a job queue through the states a background job can be
// in: acked, retried with backoff, dead-lettered (with the reason and the
// history of every attempt), redriven once the bug is fixed, and counted.
//
//	go run ./examples/jobs
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// Invoice is the job's payload: a value, never shared mutable state.
type Invoice struct {
	Number   int
	Customer string
	Amount   string // as received from the upstream system
}

const (
	workers     = 4
	maxAttempts = 4
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
}

// mailer sends invoices. It has a bug (it cannot parse amounts with a
// thousands separator) until fixed is set; and its mail server refuses
// the first two attempts for invoice 3.
type mailer struct {
	fixed     atomic.Bool
	busyCalls atomic.Int32
}

func (m *mailer) send(ctx context.Context, job queue.Job[Invoice]) error {
	inv := job.Payload
	if inv.Customer == "" {
		return retry.Permanent(errors.New("no customer: nothing to retry"))
	}
	amount := inv.Amount
	if m.fixed.Load() {
		amount = strings.ReplaceAll(amount, ",", "")
	}
	if _, err := strconv.ParseFloat(amount, 64); err != nil {
		return fmt.Errorf("parse amount: %w", err) // a bug: every attempt fails the same way
	}
	if inv.Number == 3 && m.busyCalls.Add(1) <= 2 {
		return errors.New("mail server busy") // transient
	}
	return nil
}

func run(ctx context.Context, out io.Writer) error {
	settled := make(chan queue.Event, 16) // acked or dead: at most one event per job in flight
	q, err := queue.New[Invoice](ctx,
		queue.WithCapacity(1000), // enqueue blocks beyond 1,000 stored jobs (the default policy)
		queue.WithDedupHorizon(time.Hour),
		queue.WithHooks(queue.Hooks{
			OnSuccess: func(_ context.Context, e queue.Event) { settled <- e },
			OnDead:    func(_ context.Context, e queue.Event) { settled <- e },
		}),
	)
	if err != nil {
		return err
	}
	defer q.Close(context.WithoutCancel(ctx)) // an early return: still stop the consumer's workers

	invoices := []Invoice{
		{1, "ada", "120.00"}, {2, "grace", "75.50"}, {3, "edsger", "310.00"},
		{4, "barbara", "1,250.00"}, {5, "", "10.00"}, {6, "ken", "42.00"},
	}
	for _, inv := range invoices {
		if _, err := q.Enqueue(ctx, inv, queue.WithID(fmt.Sprintf("invoice-%d", inv.Number))); err != nil {
			return err
		}
	}
	// The producer retries its last send after a timeout: same ID, no second job.
	_, err = q.Enqueue(ctx, invoices[5], queue.WithID("invoice-6"))
	fmt.Fprintf(out, "enqueued %d invoices; sending invoice-6 again: %v\n", len(invoices), err)

	m := &mailer{}
	c, err := q.Consume(ctx, m.send,
		queue.WithWorkers(workers),
		queue.WithMaxAttempts(maxAttempts),
		queue.WithBackoff(backoff.Exponential(time.Millisecond, 2, 10*time.Millisecond)),
	)
	if err != nil {
		return err
	}
	if err := waitSettled(ctx, settled, len(invoices)); err != nil {
		return err
	}
	fmt.Fprintln(out, "every invoice acked or dead-lettered:")
	if err := printStats(ctx, out, q); err != nil {
		return err
	}

	fmt.Fprintln(out, "dead letters:")
	var dead []queue.DeadLetter[Invoice]
	for dl, err := range q.DeadLetters(ctx) {
		if err != nil {
			return err
		}
		dead = append(dead, dl)
	}
	slices.SortFunc(dead, func(a, b queue.DeadLetter[Invoice]) int { return strings.Compare(a.Job.ID, b.Job.ID) })
	for _, dl := range dead {
		fmt.Fprintf(out, "  %s (%s): reason %s after %d attempt(s)\n", dl.Job.ID, dl.Job.Payload.Amount, dl.Reason, dl.Job.Attempt)
		for i, a := range dl.History {
			fmt.Fprintf(out, "    attempt %d: %s\n", i+1, a.Error)
		}
	}

	// The bug is fixed and deployed: redrive the invoice it broke, purge the
	// one that can never be sent.
	m.fixed.Store(true)
	if err := q.Redrive(ctx, "invoice-4"); err != nil {
		return err
	}
	if err := q.Purge(ctx, "invoice-5"); err != nil {
		return err
	}
	if err := waitSettled(ctx, settled, 1); err != nil {
		return err
	}
	fmt.Fprintln(out, "after the fix: invoice-4 redriven (and acked), invoice-5 purged (its dead letter deleted, still counted in the totals):")
	if err := printStats(ctx, out, q); err != nil {
		return err
	}

	// Drain works off whatever is left (nothing, here), then closes the consumer. Its report
	// counts only the jobs it settled itself.
	report, err := c.Drain(ctx)
	if err != nil {
		return err
	}
	st, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "consumer drained and closed: %d of the %d acks happened during the drain "+
		"(its report: acked=%d returned=%d dead-lettered=%d abandoned=%d)\n",
		report.Acked, st.Acked, report.Acked, report.Returned, report.DeadLettered, report.Abandoned)
	return q.Close(ctx)
}

// waitSettled waits until n jobs were acked or dead-lettered.
func waitSettled(ctx context.Context, settled <-chan queue.Event, n int) error {
	for range n {
		select {
		case <-settled:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

func printStats(ctx context.Context, out io.Writer, q *queue.Queue[Invoice]) error {
	st, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	// Counters (totals since the queue was made) and gauges (what it stores now) apart: a
	// purged dead letter leaves the first, and not the second.
	fmt.Fprintf(out, "  totals: enqueued=%d duplicates=%d acked=%d retries=%d dead-lettered=%d (attempts=%d permanent=%d)\n",
		st.Enqueued, st.Duplicates, st.Acked, st.Retried, st.DeadLetteredTotal(),
		st.DeadLettered[queue.ReasonAttempts], st.DeadLettered[queue.ReasonPermanent])
	fmt.Fprintf(out, "  stored now: ready=%d in-flight=%d delayed=%d dead-letters=%d\n",
		st.Ready, st.InFlight, st.Delayed, st.Dead)
	return nil
}
