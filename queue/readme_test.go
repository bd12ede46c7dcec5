package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
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
			log.Printf("%s: %s after %d attempt(s), %v", dl.Job.ID, dl.Reason, len(dl.History), err)
		}
		return err
	}()
	want := []string{"inv-2: permanent after 1 attempt(s), <nil>"}
	if err != nil || id != "inv-1" || len(sent) != 1 || !slices.Equal(logged, want) || report.Acked+report.DeadLettered > 2 {
		t.Errorf("err %v, id %q, sent %v, logged %q, report %+v", err, id, sent, logged, report)
	}
}
