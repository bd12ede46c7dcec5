package queue

import (
	"context"
	"testing"
)

// TestEnqueueAllocations pins the enqueue hot path's allocations with no
// consumer: the default codec's copy of a []byte payload, and the stored
// job's entry (which a consumer's acks recycle: BenchmarkQueueInMemory shows
// 1 allocation a job). A Message that escapes to the heap on its way to the
// backend (say, by pointer through driver.InProcess.EnqueueFresh) makes it
// three.
func TestEnqueueAllocations(t *testing.T) {
	ctx := context.Background()
	q, err := New[[]byte](ctx, WithCapacity(0))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	payload := []byte("job")
	// Warm up: the first enqueues allocate the inbox and the first ID chunk.
	for range 1000 {
		if _, err := q.Enqueue(ctx, payload); err != nil {
			t.Fatal(err)
		}
	}
	got := testing.AllocsPerRun(1000, func() {
		if _, err := q.Enqueue(ctx, payload); err != nil {
			t.Fatal(err)
		}
	})
	if got != 2 {
		t.Fatalf("Enqueue allocates %v times a job, want 2 (the payload's copy, the entry)", got)
	}
}
