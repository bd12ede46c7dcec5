package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/memory"
	"github.com/corral-go/corral/retry"
)

// The README's queue snippet, as written there, with stubs for what it calls.
func TestREADMESnippet(t *testing.T) {
	type Invoice struct{ ID, Customer string }
	ctx := context.Background()
	shutdownCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	inv := Invoice{ID: "inv-1", Customer: "ada"}
	var sent []string
	send := func(_ context.Context, inv Invoice) error {
		if inv.Customer == "" {
			return retry.Permanent(errors.New("no customer"))
		}
		sent = append(sent, inv.ID)
		return nil
	}

	var id string
	var report queue.Report
	var logged []string
	log := struct{ Printf func(string, ...any) }{func(f string, args ...any) { logged = append(logged, fmt.Sprintf(f, args...)) }}
	err := func() error {
		q, err := queue.New[Invoice](ctx, queue.WithCapacity(10_000), queue.WithDedupHorizon(time.Hour))
		if err != nil {
			return err
		}
		defer q.Close(shutdownCtx) // closes its consumers and its backend
		id, err = q.Enqueue(ctx, inv, queue.WithID(inv.ID), queue.WithKey(inv.Customer))
		if err != nil {
			return err
		}
		if _, err := q.Enqueue(ctx, Invoice{ID: "inv-2"}, queue.WithID("inv-2")); err != nil {
			return err
		}

		c, err := q.Consume(ctx, func(ctx context.Context, job queue.Job[Invoice]) error {
			return send(ctx, job.Payload) // nil acks; an error retries with backoff; retry.Permanent dead-letters
		}, queue.WithWorkers(8), queue.WithMaxAttempts(5), queue.WithLease(time.Minute))
		if err != nil {
			return err
		}

		report, err = c.Drain(shutdownCtx) // works off the backlog, then closes: acked, returned, dead-lettered, abandoned

		for dl, err := range q.DeadLetters(ctx) { // then q.Redrive(ctx, id) once fixed, or q.Purge(ctx, id)
			log.Printf("%s: %s after %d attempt(s), %v", dl.Job.ID, dl.Reason, dl.Job.Attempt, err)
		}
		return err
	}()
	want := []string{"inv-2: permanent after 1 attempt(s), <nil>"}
	if err != nil || id != "inv-1" || len(sent) != 1 || !slices.Equal(logged, want) || report.Acked+report.DeadLettered > 2 {
		t.Errorf("err %v, id %q, sent %v, logged %q, report %+v", err, id, sent, logged, report)
	}
}

// The README's "Deploys and priorities" snippets, as written there, with stubs for what they
// call.
func TestREADMEDeploysSnippets(t *testing.T) {
	type OrderV1 struct{ N, Amount int }
	type Order struct {
		N     int
		Cents int64
	}
	ctx := context.Background()
	b := memory.New()
	q, err := queue.New[Order](ctx, queue.WithBackend(b),
		queue.WithVersion(2), // Order is v2: amounts in cents
		queue.WithUpgrade(1, func(o OrderV1) (Order, error) { return Order{N: o.N, Cents: int64(o.Amount) * 100}, nil }),
		queue.WithVersionWait(time.Hour)) // the default: then ReasonVersion, redrive once fixed
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)

	userQ, _ := queue.New[string](ctx)
	defer userQ.Close(ctx)
	bulkQ, _ := queue.New[int](ctx)
	defer bulkQ.Close(ctx)
	serve := func(context.Context, queue.Job[string]) error { return nil }
	copyRow := func(context.Context, queue.Job[int]) error { return nil }

	sh := queue.NewShare(8, queue.Weighted) // or queue.Strict: a lower weight runs only when higher ones are empty
	users, err := userQ.Consume(ctx, serve, queue.WithShare(sh, "users", 6))
	if err != nil {
		t.Fatal(err)
	}
	bulk, err := bulkQ.Consume(ctx, copyRow, queue.WithShare(sh, "backfill", 1), queue.WithWorkers(2)) // at most 2 of the 8
	if err != nil {
		t.Fatal(err)
	}
	stats, err := sh.Stats(ctx) // per consumer: turns, worker time and its share, queue depth and lag
	if err != nil || len(stats) != 2 || stats[0].Cap != 8 || stats[1].Cap != 2 || stats[1].Weight != 1 {
		t.Errorf("stats %+v (%v): want users capped at 8, backfill at 2 with weight 1", stats, err)
	}
	_, _ = users.Close(ctx)
	_, _ = bulk.Close(ctx)
}

// The README's "Operating a queue" snippet, as written there, on a queue with one dead letter
// (inv-1, permanent) and one delayed job (inv-7).
func TestREADMEOperatingSnippet(t *testing.T) {
	ctx := context.Background()
	q, err := queue.New[string](ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	_, _ = q.Enqueue(ctx, "x", queue.WithID("inv-1"))
	c, err := q.Consume(ctx, func(context.Context, queue.Job[string]) error {
		return retry.Permanent(errors.New("card declined"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	_, _ = q.Enqueue(ctx, "y", queue.WithID("inv-7"), queue.WithDelay(time.Hour))
	var printed []string
	fmt := struct{ Println func(...any) }{func(a ...any) { printed = append(printed, fmtSprint(a...)) }}

	page, err := q.Jobs(ctx, queue.Filter{State: queue.StateDead, Reason: queue.ReasonPermanent, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range page.Jobs { // page.Next is the cursor of the next page: it stays valid while jobs move
		fmt.Println(j.Job.ID, j.Job.Attempt, j.History[len(j.History)-1].Error)
	}
	job, err := q.Inspect(ctx, "inv-7") // state, attempts and history, next run, lease, version, key, size
	if err != nil || job.State != queue.StateDelayed {
		t.Errorf("Inspect(inv-7) = %+v, %v", job, err)
	}
	err = q.Cancel(ctx, "inv-7") // waiting: dead-lettered with ReasonCanceled; running: its ctx is cancelled
	if err != nil {
		t.Error(err)
	}
	err = q.Pause(ctx) // every process stops starting jobs; enqueues still accepted; Stats.Paused
	if err != nil {
		t.Error(err)
	}
	err = q.Resume(ctx)
	if err != nil {
		t.Error(err)
	}
	n, err := q.RedriveAll(ctx, queue.Filter{Reason: queue.ReasonPermanent}) // also PurgeAll, CancelAll: batches, counts

	if err != nil || n != 1 || !slices.Equal(printed, []string{"inv-1 1 card declined"}) {
		t.Errorf("redriven %d (%v), printed %q", n, err, printed)
	}
}

func fmtSprint(a ...any) string { return strings.TrimSuffix(fmt.Sprintln(a...), "\n") }
