package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
)

// wantPanic checks that f panics in the caller's goroutine with exactly the message want.
func wantPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if v := recover(); v != want {
			t.Errorf("recovered %#v; want a panic with %q", v, want)
		}
	}()
	f()
}

var bg = context.Background()

// Settings no queue can honour panic where the option is written, naming the package and the
// option; a nil option, context or codec of another type panics in New.
func TestOptionsPanicOnImpossibleSettings(t *testing.T) {
	wantPanic(t, "queue: WithBackend(nil): nil backend", func() { queue.WithBackend(nil) })
	wantPanic(t, "queue: WithCapacity(-1): negative capacity", func() { queue.WithCapacity(-1) })
	wantPanic(t, "queue: WithOverflow(Overflow(4)): unknown overflow", func() { queue.WithOverflow(queue.DropOldest + 1) })
	wantPanic(t, "queue: WithOverflow(Overflow(-1)): unknown overflow", func() { queue.WithOverflow(-1) })
	wantPanic(t, "queue: WithDedupHorizon(-1s): negative duration", func() { queue.WithDedupHorizon(-time.Second) })
	wantPanic(t, "queue: WithDeadLetterLimit(-1): negative limit", func() { queue.WithDeadLetterLimit(-1) })
	wantPanic(t, "queue: WithMaxWait(-1s): negative duration", func() { queue.WithMaxWait(-time.Second) })
	wantPanic(t, "queue: WithCodec(nil): nil codec", func() { queue.WithCodec[string](nil) })
	//lint:ignore SA1012 the nil ctx is the test
	wantPanic(t, "queue: New with a nil context", func() { _, _ = queue.New[int](nil) })
	wantPanic(t, "queue: nil option", func() { _, _ = queue.New[int](bg, nil) })
	wantPanic(t, "queue: WithCodec(queue_test.stringCodec): not a Codec[int], the queue's payload type",
		func() { _, _ = queue.New[int](bg, queue.WithCodec[string](stringCodec{})) })
}

// The consumer's options panic likewise, and Consume panics on a nil option, handler or ctx.
func TestConsumerOptionsPanicOnImpossibleSettings(t *testing.T) {
	wantPanic(t, "queue: WithWorkers(0): need at least 1", func() { queue.WithWorkers(0) })
	wantPanic(t, "queue: WithLease(0s): need a positive lease", func() { queue.WithLease(0) })
	wantPanic(t, "queue: WithLease(-1s): need a positive lease", func() { queue.WithLease(-time.Second) })
	wantPanic(t, "queue: WithMaxAttempts(0): need at least 1", func() { queue.WithMaxAttempts(0) })
	q, err := queue.New[int](bg)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(bg)
	h := func(context.Context, queue.Job[int]) error { return nil }
	wantPanic(t, "queue: nil option", func() { _, _ = q.Consume(bg, h, nil) })
	wantPanic(t, "queue: nil handler", func() { _, _ = q.Consume(bg, nil) })
	//lint:ignore SA1012 the nil ctx is the test
	wantPanic(t, "queue: Consume with a nil context", func() { _, _ = q.Consume(nil, h) })
	wantPanic(t, "queue: nil option", func() { _, _ = q.Enqueue(bg, 1, nil) })
	//lint:ignore SA1012 the nil ctx is the test
	wantPanic(t, "queue: Enqueue with a nil context", func() { _, _ = q.Enqueue(nil, 1) })
	if s, _ := q.Stats(bg); s.Enqueued != 0 || s.Ready != 0 {
		t.Errorf("stats %+v: want nothing enqueued by the calls that panicked", s)
	}
}

// Every method of a zero Queue or Consumer panics at once, in the caller's goroutine, saying
// what to use.
func TestZeroValuesPanicSayingWhatToUse(t *testing.T) {
	const zq = "queue: zero Queue: use queue.New"
	var q queue.Queue[int]
	h := func(context.Context, queue.Job[int]) error { return nil }
	wantPanic(t, zq, func() { _, _ = q.Enqueue(bg, 1) })
	wantPanic(t, zq, func() { _, _ = q.Consume(bg, h) })
	wantPanic(t, zq, func() { _ = q.DeadLetters(bg) })
	wantPanic(t, zq, func() { _ = q.Redrive(bg, "x") })
	wantPanic(t, zq, func() { _ = q.Purge(bg, "x") })
	wantPanic(t, zq, func() { _, _ = q.Stats(bg) })
	wantPanic(t, zq, func() { _ = q.Health() })
	wantPanic(t, zq, func() { _ = q.Close(bg) })

	const zc = "queue: zero Consumer: use Queue.Consume"
	var c queue.Consumer[int]
	wantPanic(t, zc, func() { _, _ = c.Close(bg) })
	wantPanic(t, zc, func() { _, _ = c.Drain(bg) })
}
