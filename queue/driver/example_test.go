package driver_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// A backend that finds the queue full returns the policy's refusal, if it
// has one, and otherwise makes room as the policy says.
func ExampleOverflow_Refusal() {
	for _, o := range []driver.Overflow{driver.Block, driver.Reject, driver.DropNewest, driver.DropOldest} {
		fmt.Printf("%s: %v\n", o, o.Refusal())
	}
	// Output:
	// block: <nil>
	// reject: queue: full
	// drop-newest: queue: dropped (full)
	// drop-oldest: <nil>
}

// A waiting Receive waits for a wake-up, its poll interval, the backend's
// Close or its caller's ctx.
func ExampleCall_Wait() {
	call := driver.Call{Name: "mybackend"}
	wake, closing := make(chan struct{}), make(chan struct{})
	close(wake) // another call stored a job
	woken, err := call.Wait(context.Background(), wake, closing, time.Second)
	fmt.Println(woken, err)

	close(closing) // Close
	woken, err = call.Wait(context.Background(), nil, closing, time.Second)
	fmt.Println(woken, errors.Is(err, driver.ErrClosed))
	// Output:
	// true <nil>
	// false true
}

// A backend's Open, Close and the check at the start of its other calls,
// kept by one Lifecycle, which the backend's New marks with Init.
func ExampleLifecycle() {
	call := driver.Call{Name: "mybackend"}
	var (
		life driver.Lifecycle
		cfg  driver.Config // set by open, read by the calls after Check
	)
	life.Init() // in New
	fmt.Println(life.Check(call))
	err := life.Open(call, func() error {
		cfg = driver.Config{Capacity: 10} // and the requests that set up the broker
		return nil
	})
	fmt.Println(err, life.Check(call), cfg.Capacity)
	fmt.Println(life.Open(call, func() error { return nil }))
	fmt.Println(life.Close())
	fmt.Println(errors.Is(life.Check(call), driver.ErrClosed))
	<-life.Closing() // closed by Close: a waiting call returns ErrClosed
	// Output:
	// mybackend: backend not opened
	// <nil> <nil> 10
	// mybackend: backend already opened
	// true true
	// true
}

// A backend's CheckLease: the queue's settings (here a map standing for
// the broker) agree with this process's lease, or the call fails.
func ExampleAgreeLease() {
	var (
		mu     sync.Mutex
		mine   = driver.Shared{Capacity: 100}
		broker = map[string]driver.Shared{}
	)
	agree := func(lease time.Duration) func(context.Context, driver.Shared) (driver.Shared, error) {
		return func(ctx context.Context, s driver.Shared) (driver.Shared, error) {
			s.Lease = lease
			cur, ok := broker["q"]
			if !ok || cur.Lease == 0 {
				broker["q"] = s // the first lease is recorded
				return s, nil
			}
			return cur, s.Diff(cur)
		}
	}
	ctx := context.Background()
	fmt.Println(driver.AgreeLease(ctx, "mybackend", time.Minute, &mu, &mine, agree(time.Minute)))
	fmt.Println(driver.AgreeLease(ctx, "mybackend", time.Second, &mu, &mine, agree(time.Second)))
	fmt.Println(driver.AgreeLease(ctx, "mybackend", 0, &mu, &mine, agree(0)))
	fmt.Println(mine.Lease)
	// Output:
	// <nil>
	// lease 1s differs from the queue's 1m0s, set by another process
	// mybackend: lease 0s must be positive
	// 1m0s
}

// A backend that reads its jobs into its process answers List and Count
// with a Gather.
func ExampleGather() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g := driver.Gather(func(ctx context.Context, dead bool) ([]driver.JobInfo, error) {
		if dead {
			return []driver.JobInfo{driver.DeadInfo(&driver.DeadMessage{
				Message: driver.Message{ID: "x", EnqueuedAt: at}, Reason: driver.ReasonCanceled})}, nil
		}
		return []driver.JobInfo{
			{Message: driver.Message{ID: "b", EnqueuedAt: at}, JobStatus: driver.JobStatus{State: driver.StateReady}},
			{Message: driver.Message{ID: "a", EnqueuedAt: at}, JobStatus: driver.JobStatus{State: driver.StateDelayed}},
			{Message: driver.Message{ID: "c", EnqueuedAt: at.Add(time.Second)}, JobStatus: driver.JobStatus{State: driver.StateReady}},
		}, nil
	})
	ctx := context.Background()
	page, _ := g.List(ctx, driver.Filter{Limit: 2})
	for _, j := range page {
		fmt.Println(j.ID, j.State)
	}
	n, _ := g.Count(ctx, driver.Filter{State: driver.StateReady})
	dead, _ := g.List(ctx, driver.Filter{State: driver.StateDead, Limit: 10})
	fmt.Println(n, "ready;", dead[0].ID, dead[0].Reason)
	_, err := g.List(ctx, driver.Filter{})
	fmt.Println(err)
	// Output:
	// a delayed
	// b ready
	// 2 ready; x canceled
	// queue: page size must be 1 to 1000
}

// A backend that can read its stored jobs, and whose DeadLetters lists its
// dead letters, gets its Gather from NewGather; the open check comes first.
func ExampleNewGather() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	open := error(nil)
	stored := func(context.Context) ([]driver.JobInfo, error) {
		return []driver.JobInfo{{Message: driver.Message{ID: "a", EnqueuedAt: at}, JobStatus: driver.JobStatus{State: driver.StateReady}}}, nil
	}
	dead := func(context.Context) iter.Seq2[driver.DeadMessage, error] {
		return func(yield func(driver.DeadMessage, error) bool) {
			yield(driver.DeadMessage{Message: driver.Message{ID: "x", EnqueuedAt: at}, Reason: driver.ReasonPanic}, nil)
		}
	}
	g := driver.NewGather(func() error { return open }, dead, stored)
	ctx := context.Background()
	n, _ := g.Count(ctx, driver.Filter{})
	page, _ := g.List(ctx, driver.Filter{State: driver.StateDead, Limit: 10})
	fmt.Println(n, "stored;", page[0].ID, page[0].State, page[0].Reason)
	open = driver.ErrClosed
	_, err := g.Count(ctx, driver.Filter{})
	fmt.Println(err)
	// Output:
	// 1 stored; x dead panic
	// queue: closed
}
