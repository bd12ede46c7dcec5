// Command schedules runs jobs in time on one queue: a periodic job on a cron
// schedule (parsed by github.com/robfig/cron/v3, whose schedules have the
// Next method queue.Periodic takes), run by two runners as two processes of
// a service would, each tick enqueued once; a handler that snoozes its job
// until the data it needs is there, without spending its attempts; a
// unique key that refuses a second refresh of a user's feed while the
// first is pending; and a consumer limited to a partner's rate of calls
// beside an unlimited one, on one Share of workers.
//
//	go run ./examples/schedules
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/corral-go/corral/queue"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "schedules:", err)
		os.Exit(1)
	}
}

// Job is the queue's payload: a rollup of the period that ended at a tick,
// a report waiting for its data, or a feed refresh.
type Job struct {
	Kind string
	Tick time.Time
	User string
}

func run(ctx context.Context, out io.Writer) error {
	// A tick's ID must stay taken for longer than the period: the dedup
	// horizon tells the runners' enqueues of one tick apart from the next.
	q, err := queue.New[Job](ctx, queue.WithDedupHorizon(time.Hour))
	if err != nil {
		return err
	}
	defer q.Close(ctx)

	var dataReady atomic.Int32 // the report's data arrives on the third look
	rollups := make(chan string, 10)
	reports := make(chan queue.Job[Job], 1)
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[Job]) error {
		switch j.Payload.Kind {
		case "rollup":
			rollups <- j.ID
		case "report":
			if dataReady.Add(1) < 3 {
				return queue.Snooze(50 * time.Millisecond) // not there yet: look again later
			}
			reports <- j
		}
		return nil
	}, queue.WithMaxAttempts(1), queue.WithMaxSnoozes(10))
	if err != nil {
		return err
	}

	// Every second, by a cron spec with a seconds field; two runners.
	spec, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse("* * * * * *")
	if err != nil {
		return err
	}
	rollup := func(tick time.Time) Job { return Job{Kind: "rollup", Tick: tick} }
	var runners []*queue.Periodic
	for range 2 {
		p, err := q.Periodic("rollup", spec, rollup)
		if err != nil {
			return err
		}
		runners = append(runners, p)
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		id := <-rollups
		if seen[id] {
			return fmt.Errorf("tick %s handled twice", id)
		}
		seen[id] = true
		fmt.Fprintf(out, "rollup tick handled once: %v\n", strings.HasPrefix(id, "rollup@"))
	}
	for _, p := range runners {
		p.Stop()
	}

	if _, err := q.Enqueue(ctx, Job{Kind: "report"}); err != nil {
		return err
	}
	r := <-reports
	fmt.Fprintf(out, "report handled at attempt %d after %d looks\n", r.Attempt, dataReady.Load())

	first, err := q.Enqueue(ctx, Job{Kind: "refresh", User: "ada"}, queue.WithNotBefore(time.Now().Add(time.Hour)),
		queue.WithUnique("refresh:ada", 10*time.Minute))
	if err != nil {
		return err
	}
	again, err := q.Enqueue(ctx, Job{Kind: "refresh", User: "ada"}, queue.WithUnique("refresh:ada", 10*time.Minute))
	fmt.Fprintf(out, "second refresh of ada refused: %v, the first's ID returned: %v\n", errors.Is(err, queue.ErrNotUnique), again == first)

	if _, err := c.Close(ctx); err != nil {
		return err
	}
	st, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "snoozed=%d retried=%d\n", st.Snoozed, st.Retried)
	return rates(ctx, out)
}

// rates runs a consumer limited to 2 calls of a partner's API per 500ms beside an unlimited
// one, on one Share of two workers: the limited one waits for its starts holding no worker,
// so the other runs on both.
func rates(ctx context.Context, out io.Writer) error {
	partner, err := queue.New[int](ctx)
	if err != nil {
		return err
	}
	defer partner.Close(ctx)
	local, err := queue.New[int](ctx)
	if err != nil {
		return err
	}
	defer local.Close(ctx)
	for i := range 6 {
		if _, err := partner.Enqueue(ctx, i); err != nil {
			return err
		}
	}
	for i := range 20 {
		if _, err := local.Enqueue(ctx, i); err != nil {
			return err
		}
	}
	const n, per = 2, 500 * time.Millisecond
	var (
		mu        sync.Mutex
		starts    []time.Time
		localDone time.Time
		done      sync.WaitGroup
	)
	done.Add(26)
	sh := queue.NewShare(2, queue.Weighted)
	first := time.Now() // no start before this
	cp, err := partner.Consume(ctx, func(ctx context.Context, j queue.Job[int]) error {
		defer done.Done()
		mu.Lock()
		starts = append(starts, time.Now()) // in order, each after its start was taken
		mu.Unlock()
		return nil // call the partner's API
	}, queue.WithShare(sh, "partner", 1), queue.WithRateLimit(n, per))
	if err != nil {
		return err
	}
	begin := time.Now()
	cl, err := local.Consume(ctx, func(ctx context.Context, j queue.Job[int]) error {
		defer done.Done()
		time.Sleep(40 * time.Millisecond) // local work
		mu.Lock()
		localDone = time.Now()
		mu.Unlock()
		return nil
	}, queue.WithShare(sh, "local", 1))
	if err != nil {
		return err
	}
	done.Wait()
	_, _ = cp.Drain(ctx)
	_, _ = cl.Drain(ctx)
	// No span of per holds more than n starts: the i-th start (from 0) is at least i/n pers
	// after the first could be, and a handler sees its start a moment after it was taken.
	paced := true
	for i, at := range starts {
		paced = paced && at.Sub(first) >= time.Duration(i/n)*per
	}
	fmt.Fprintf(out, "partner: %d calls, the i-th at least i/%d × %v after the first could start: %v\n", len(starts), n, per, paced)
	// On one worker, the 20 jobs of 40ms would take 800ms at least.
	fmt.Fprintf(out, "local: 20 jobs of 40ms on both workers (within 700ms): %v\n", localDone.Sub(begin) < 700*time.Millisecond)
	return nil
}
