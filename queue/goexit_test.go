package queue_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/scope"
)

// scope, pool and queue report a runtime.Goexit with one value, so that errors.Is matches it
// whichever package reported it.
func TestErrGoexitIsOneValueAcrossPackages(t *testing.T) {
	if queue.ErrGoexit != scope.ErrGoexit || queue.ErrGoexit != pool.ErrGoexit {
		t.Fatalf("queue.ErrGoexit %p, scope.ErrGoexit %p, pool.ErrGoexit %p: want one value",
			queue.ErrGoexit, scope.ErrGoexit, pool.ErrGoexit)
	}
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		s.Go(func(context.Context) error { runtime.Goexit(); return nil })
		return nil
	})
	if !errors.Is(err, queue.ErrGoexit) || !errors.Is(err, pool.ErrGoexit) {
		t.Errorf("scope's error %v does not match queue.ErrGoexit and pool.ErrGoexit", err)
	}
}

// A handler that calls runtime.Goexit is dead-lettered at once with ReasonPanic; the OnDead
// event's Err matches queue.ErrGoexit (and is no *PanicError), and the job's one history entry
// has ErrGoexit's text.
func TestHandlerGoexitIsDeadLetteredWithErrGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead := make(chan queue.Event, 1)
		q, err := queue.New[string](bg, queue.WithHooks(queue.Hooks{
			OnDead: func(_ context.Context, e queue.Event) { dead <- e },
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close(bg)
		c, err := q.Consume(bg, func(context.Context, queue.Job[string]) error {
			runtime.Goexit() // what t.FailNow in a handler does
			return nil
		}, queue.WithMaxAttempts(3))
		if err != nil {
			t.Fatal(err)
		}
		mustEnqueue(t, q, "quitter")
		e := <-dead
		var pe *queue.PanicError
		if e.Reason != queue.ReasonPanic || !errors.Is(e.Err, queue.ErrGoexit) || errors.As(e.Err, &pe) {
			t.Errorf("OnDead: reason %q, err %v; want reason panic, an error matching queue.ErrGoexit", e.Reason, e.Err)
		}
		if _, err := c.Close(bg); err != nil {
			t.Fatalf("Close: %v", err)
		}
		n := 0
		for dl, err := range q.DeadLetters(bg) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if dl.Reason != queue.ReasonPanic || len(dl.History) != 1 || dl.History[0].Error != queue.ErrGoexit.Error() {
				t.Errorf("dead letter: reason %q, history %+v; want panic, one entry with %q", dl.Reason, dl.History, queue.ErrGoexit)
			}
		}
		if n != 1 {
			t.Errorf("%d dead letters, want 1", n)
		}
	})
}
