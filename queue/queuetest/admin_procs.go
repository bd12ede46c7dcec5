package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
)

// RunAdminAcrossProcesses checks that the operator's verbs reach another process: open
// returns a new, unopened backend of one and the same queue each time it is called (as two
// processes would open it), on a backend that implements driver.Admin. A worker queue on one
// backend runs a job; an operator queue on another cancels it, and the handler's context must
// be cancelled with queue.ErrCanceled within cancelWithin (the consumer's renewal period, half
// the lease given, plus what a backend call takes); then the operator pauses the queue, and
// the worker must start no job enqueued pauseWithin after the pause (the backend's bound, zero
// for one whose pause holds when it returns) for pauseQuiet, until the operator resumes it.
func RunAdminAcrossProcesses(t *testing.T, open func(t *testing.T) driver.Backend, lease, cancelWithin, pauseWithin, pauseQuiet time.Duration) {
	ctx := context.Background()
	newQueue := func() *queue.Queue[string] {
		b := open(t)
		if _, ok := b.(driver.Admin); !ok {
			t.Skip("backend does not implement driver.Admin")
		}
		q, err := queue.New[string](ctx, queue.WithBackend(b))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close(ctx) })
		return q
	}
	worker, operator := newQueue(), newQueue()
	e := &env{T: t, unit: 100 * time.Millisecond} // its waits: 20s at most
	started := make(chan string, 4)
	cause := make(chan error, 1)
	if _, err := worker.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		started <- j.ID
		if j.ID == "long" {
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return context.Cause(ctx)
		}
		return nil
	}, queue.WithWorkers(1), queue.WithLease(lease)); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.Enqueue(ctx, "x", queue.WithID("long")); err != nil {
		t.Fatal(err)
	}
	recv(e, started, "the handler's start")
	t0 := time.Now()
	if err := operator.Cancel(ctx, "long"); err != nil {
		t.Fatal(err)
	}
	if err := recv(e, cause, "the handler's cancellation"); !errors.Is(err, queue.ErrCanceled) {
		t.Errorf("handler's cause %v, want ErrCanceled", err)
	}
	if d := time.Since(t0); d > cancelWithin {
		t.Errorf("cancelled %v after Cancel in the other process, want within %v", d, cancelWithin)
	}
	checkPauseAcross(e, worker, operator, started, pauseWithin, pauseQuiet)
}

// checkPauseAcross pauses the queue from operator and checks that worker's consumer, which
// reports the jobs it starts on started, starts none for quiet, and starts the held job once
// operator resumes the queue.
func checkPauseAcross(e *env, worker, operator *queue.Queue[string], started <-chan string, pauseWithin, pauseQuiet time.Duration) {
	t, ctx := e.T, context.Background()
	if err := operator.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pauseWithin) // the bound the backend states: no event to wait on
	if _, err := operator.Enqueue(ctx, "x", queue.WithID("held")); err != nil {
		t.Fatal(err)
	}
	quiet(e, started, pauseQuiet, "a job started while paused")
	if s, err := worker.Stats(ctx); err != nil || !s.Paused || s.Ready != 1 {
		t.Errorf("the worker's stats %+v, %v: want paused, 1 ready", s, err)
	}
	if err := operator.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if id := recv(e, started, "the start after resume"); id != "held" {
		t.Errorf("started %s after resume, want held", id)
	}
}
