package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/corral-go/corral/queue"
)

// An explicit ID may repeat one the queue generated, but not take one it
// has yet to generate: a generated ID is never taken. (Found in review: a
// job enqueued with the next generated ID and the job then generated with
// it were both stored, and a dead letter of one could be redriven over the
// other.)
func TestExplicitIDCannotTakeAGeneratedOne(t *testing.T) {
	ctx := context.Background()
	q, err := queue.New[int](context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id0, err := q.Enqueue(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	next := id0[:len(id0)-1] + "1" // the counter is the last hex digits
	_, err = q.Enqueue(ctx, 1, queue.WithID(next))
	if err == nil || !strings.Contains(err.Error(), "yet to generate") {
		t.Fatalf("WithID(%s), the next generated ID: %v, want it refused", next, err)
	}
	if errors.Is(err, queue.ErrDuplicate) {
		t.Fatalf("refusal %v must not read as a duplicate", err)
	}
	if id, err := q.Enqueue(ctx, 1); err != nil || id != next {
		t.Fatalf("generated %s, %v; want %s", id, err, next)
	}
	if _, err := q.Enqueue(ctx, 2, queue.WithID(id0)); !errors.Is(err, queue.ErrDuplicate) {
		t.Fatalf("WithID of a generated ID still stored: %v, want ErrDuplicate", err)
	}
	for _, id := range []string{id0[:len(id0)-1] + "F", "x" + id0[1:], id0 + "0"} {
		if _, err := q.Enqueue(ctx, 3, queue.WithID(id)); err != nil { // not this queue's digits
			t.Errorf("WithID(%s): %v", id, err)
		}
	}
	s, _ := q.Stats(ctx)
	if s.Enqueued != 5 || s.Duplicates != 1 || s.Ready != 5 {
		t.Fatalf("stats %+v: want 5 enqueued, 1 duplicate, 5 ready", s)
	}
}
