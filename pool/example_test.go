package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/pool"
)

// occupy fills p's single worker until the returned func is called.
func occupy(p *pool.Pool) (release func()) {
	gate := make(chan struct{})
	started := make(chan struct{})
	_ = p.Submit(context.Background(), func(context.Context) error {
		close(started)
		<-gate
		return nil
	})
	<-started
	return func() { close(gate) }
}

func noop(context.Context) error { return nil }

// A pool of 4 workers and a queue of 16: Close waits for every task it accepted.
func ExampleNew() {
	p := pool.New(4, 16)
	var done atomic.Int32
	for range 10 {
		if err := p.Submit(context.Background(), func(context.Context) error {
			done.Add(1)
			return nil
		}); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(p.Close(context.Background()), done.Load())
	s := p.Stats()
	fmt.Println(s.Submitted, s.Completed, s.Workers)
	// Output:
	// <nil> 10
	// 10 10 0
}

// Submit returns once the pool has accepted the task (or refused it); the task's failure goes
// to Hooks.OnError, with the context it was submitted with.
func ExamplePool_Submit() {
	// The hook runs on a worker, maybe before Submit returns: it logs to its own writer,
	// printed once Close has waited for every task.
	var log strings.Builder
	p := pool.New(2, 8, pool.WithHooks(pool.Hooks{OnError: func(ctx context.Context, e pool.ErrorEvent) {
		fmt.Fprintln(&log, "job", ctx.Value(jobKey{}), "failed:", e.Err)
	}}))
	ctx := context.WithValue(context.Background(), jobKey{}, "resize-42")
	err := p.Submit(ctx, func(ctx context.Context) error { return errors.New("image too large") })
	fmt.Println("submit:", err)
	_ = p.Close(context.Background())
	fmt.Print(log.String())
	fmt.Println("failed:", p.Stats().Failed)
	// Output:
	// submit: <nil>
	// job resize-42 failed: image too large
	// failed: 1
}

// Hooks get the task's submit context and an event; events log with one slog call.
func ExampleWithHooks() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if (a.Key == slog.TimeKey && len(groups) == 0) || a.Key == "duration" {
				return slog.Attr{} // a fixed output for the example
			}
			return a
		},
	}))
	p := pool.New(1, 1, pool.WithOverflow(pool.DropNewest), pool.WithHooks(pool.Hooks{
		OnDrop:  func(ctx context.Context, e pool.DropEvent) { logger.WarnContext(ctx, "task dropped", "event", e) },
		OnError: func(ctx context.Context, e pool.ErrorEvent) { logger.ErrorContext(ctx, "task failed", "event", e) },
	}))
	release := occupy(p)
	_ = p.Submit(context.Background(), func(context.Context) error { return errors.New("disk full") }) // queued
	_ = p.Submit(context.Background(), noop)                                                           // the queue is full: refused
	release()
	_ = p.Close(context.Background())
	// Output:
	// level=WARN msg="task dropped" event.reason=refused
	// level=ERROR msg="task failed" event.err="disk full"
}

type jobKey struct{}

// Under Block (the default), Submit waits for room; the caller's context bounds the wait.
func ExampleOverflow_block() {
	p := pool.New(1, 0) // one worker, hand-off only
	release := occupy(p)

	ctx, cancel := context.WithTimeoutCause(context.Background(), 10*time.Millisecond,
		errors.New("no worker free within 10ms"))
	defer cancel()
	err := p.Submit(ctx, noop)
	fmt.Println("submit:", err)

	release()
	_ = p.Close(context.Background())
	fmt.Println("rejected:", p.Stats().Rejected)
	// Output:
	// submit: no worker free within 10ms
	// rejected: 1
}

// Under Reject, a full pool refuses at once with ErrFull.
func ExampleOverflow_reject() {
	p := pool.New(1, 1, pool.WithOverflow(pool.Reject))
	release := occupy(p)
	fmt.Println("queued:", p.Submit(context.Background(), noop))
	err := p.Submit(context.Background(), noop)
	fmt.Println("full:", err, errors.Is(err, pool.ErrFull))

	release()
	_ = p.Close(context.Background())
	// Output:
	// queued: <nil>
	// full: pool: queue full true
}

// Under DropNewest, the incoming task is refused, reported to Hooks.OnDrop and counted.
func ExampleOverflow_dropNewest() {
	p := pool.New(1, 1, pool.WithOverflow(pool.DropNewest),
		pool.WithHooks(pool.Hooks{OnDrop: func(_ context.Context, e pool.DropEvent) { fmt.Println("OnDrop:", e.Reason) }}))
	release := occupy(p)
	_ = p.Submit(context.Background(), noop)
	err := p.Submit(context.Background(), noop)
	fmt.Println("submit:", err, errors.Is(err, pool.ErrDropped))

	release()
	_ = p.Close(context.Background())
	fmt.Println("refused:", p.Stats().Dropped.Refused)
	// Output:
	// OnDrop: refused
	// submit: pool: task dropped true
	// refused: 1
}

// Under DropOldest, the oldest queued task makes room for the new one; its handle says so.
func ExampleOverflow_dropOldest() {
	p := pool.New(1, 2, pool.WithOverflow(pool.DropOldest),
		pool.WithHooks(pool.Hooks{OnDrop: func(_ context.Context, e pool.DropEvent) { fmt.Println("OnDrop:", e.Reason) }}))
	release := occupy(p)
	var handles []*pool.Handle[string]
	for _, name := range []string{"first", "second", "third"} {
		h, _ := pool.Call(context.Background(), p, func(context.Context) (string, error) {
			return name + " ran", nil
		})
		handles = append(handles, h)
	}

	release()
	for _, h := range handles {
		v, err := h.Wait(context.Background())
		fmt.Printf("%q %v\n", v, err)
	}
	_ = p.Close(context.Background())
	// Output:
	// OnDrop: evicted
	// "" pool: task dropped: evicted by a newer task
	// "second ran" <nil>
	// "third ran" <nil>
}

// Under CallerRuns, a full pool runs the task in the submitting goroutine: Submit returns
// after the task has run.
func ExampleOverflow_callerRuns() {
	p := pool.New(1, 0, pool.WithOverflow(pool.CallerRuns))
	release := occupy(p)
	ran := false
	err := p.Submit(context.Background(), func(context.Context) error { ran = true; return nil })
	fmt.Println("submit:", err, "ran before Submit returned:", ran)

	release()
	_ = p.Close(context.Background())
	fmt.Println("inline:", p.Stats().Inline)
	// Output:
	// submit: <nil> ran before Submit returned: true
	// inline: 1
}

// Close waits for the queue to drain. When its deadline passes first, it cancels the running
// tasks, abandons the queued ones (reporting each to Hooks.OnDrop) and says how many.
func ExamplePool_Close() {
	p := pool.New(1, 4,
		pool.WithHooks(pool.Hooks{OnDrop: func(ctx context.Context, e pool.DropEvent) {
			fmt.Println("OnDrop:", ctx.Value(jobKey{}), e.Reason)
		}}))
	started := make(chan struct{})
	stopped := make(chan error, 1)
	_ = p.Submit(context.Background(), func(ctx context.Context) error {
		close(started)
		<-ctx.Done() // a long task that honours cancellation
		stopped <- context.Cause(ctx)
		return ctx.Err()
	})
	<-started
	for _, job := range []string{"a", "b"} {
		_ = p.Submit(context.WithValue(context.Background(), jobKey{}, job), noop)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := p.Close(ctx) // returns once the running task has returned
	fmt.Println("running task stopped:", <-stopped)
	fmt.Println("close:", err)
	fmt.Println("submit after close:", p.Submit(context.Background(), noop))
	// Output:
	// OnDrop: a shutdown
	// OnDrop: b shutdown
	// running task stopped: pool: shut down before the task finished: context deadline exceeded
	// close: pool: close: 2 queued tasks abandoned, 1 running task cancelled: context deadline exceeded
	// submit after close: pool: closed
}

// Call returns a handle for a task's result.
func ExampleCall() {
	p := pool.New(4, 16)
	defer p.Close(context.Background())
	h, err := pool.Call(context.Background(), p, func(context.Context) (int, error) { return 6 * 7, nil })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Wait(context.Background()))
	// Output: 42 <nil>
}

// A group fails fast: the first failure cancels the group's other tasks and is returned first.
func ExamplePool_Group() {
	p := pool.New(4, 16)
	defer p.Close(context.Background())
	g := p.Group(context.Background())
	g.Go(func(ctx context.Context) error {
		<-ctx.Done() // stopped by the sibling's failure; not reported as a failure itself
		return ctx.Err()
	})
	g.Go(func(context.Context) error { return errors.New("disk full") })
	fmt.Println(g.Wait())
	// Output: disk full
}
