package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

// TestServerRestart kills the server in the middle of a run and starts it again on
// the same store. Producers, blocked by a full queue or waiting for the broker, get errors that
// say what failed, and retry with the same job ID; no job the broker accepted is lost, and jobs
// in flight at the stop are handled again (at least once).
func TestServerRestart(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect(t)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := natstest.Prefix(t)
	b := jetstream.New(js, name)
	q, err := queue.New[string](context.Background(), queue.WithBackend(b), queue.WithCapacity(20), queue.WithOverflow(queue.Block),
		queue.WithDedupHorizon(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(context.Background()) // closes b too
	const jobs = 300
	var (
		mu       sync.Mutex
		handled  = map[string]int{}
		accepted = map[string]bool{}
		errs     []error
	)
	progress := make(chan struct{}, 10*jobs)
	outage := make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		mu.Lock()
		handled[j.ID]++
		mu.Unlock()
		progress <- struct{}{}
		return nil
	}, queue.WithWorkers(4), queue.WithLease(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range jobs {
			id := fmt.Sprintf("job-%03d", i)
			for ctx.Err() == nil {
				ectx, ecancel := context.WithTimeout(ctx, time.Second)
				_, err := q.Enqueue(ectx, id, queue.WithID(id))
				ecancel()
				if err == nil || errors.Is(err, queue.ErrDuplicate) {
					// A duplicate is an earlier try that the broker stored after all.
					mu.Lock()
					accepted[id] = true
					mu.Unlock()
					break
				}
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				select {
				case outage <- struct{}{}:
				default:
				}
			}
		}
	})

	for range jobs / 3 {
		<-progress
	}
	srv.Nodes[0].Kill(t)
	<-outage // a producer saw the outage
	srv.Nodes[0].Restart(t, srv)

	// Until every accepted job was handled and the work stream is empty (jobs whose ack was
	// lost in the outage come back after their lease; a job acked just before the stop may
	// be kept by the restarted server, and Stats removes it). On time-out, say what is left.
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-progress:
			continue
		case <-tick.C:
		case <-deadline.C:
			mu.Lock()
			var missing []string
			for id := range accepted {
				if handled[id] == 0 {
					missing = append(missing, id)
				}
			}
			n := len(accepted)
			mu.Unlock()
			st, err := q.Stats(ctx)
			t.Logf("timed out: %d accepted, not handled: %v; stats %+v (%v)", n, missing, st, err)
			if s, err := js.Stream(ctx, "CORRAL_"+name); err == nil {
				si := s.CachedInfo()
				t.Logf("stream state %+v", si.State)
				if m, err := s.GetMsg(ctx, si.State.FirstSeq); err == nil {
					t.Logf("first stored job: seq %d, id %s", m.Sequence, m.Header.Get("Corral-Id"))
				}
				if c, err := s.Consumer(ctx, "corral"); err == nil {
					ci := c.CachedInfo()
					t.Logf("consumer: pending %d ackpending %d waiting %d delivered %+v ackfloor %+v", ci.NumPending, ci.NumAckPending, ci.NumWaiting, ci.Delivered, ci.AckFloor)
				}
			}
			t.FailNow()
		}
		mu.Lock()
		done = len(accepted) == jobs
		for id := range accepted {
			done = done && handled[id] > 0
		}
		mu.Unlock()
		if done {
			st, err := q.Stats(ctx)
			done = err == nil && st.Ready+st.InFlight+st.Delayed == 0
		}
	}
	wg.Wait()
	if _, err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(errs) == 0 {
		t.Fatal("no producer saw the outage")
	}
	for _, err := range errs {
		if !strings.HasPrefix(err.Error(), "jetstream: ") && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("producer error %q: want one that says jetstream failed, or its deadline", err)
		}
	}
	dups := 0
	for i := range jobs {
		id := fmt.Sprintf("job-%03d", i)
		if handled[id] == 0 {
			t.Errorf("%s: accepted, never handled", id)
		}
		dups += max(handled[id]-1, 0)
	}
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready+st.InFlight+st.Delayed != 0 {
		t.Errorf("stats %+v: want nothing stored", st)
	}
	t.Logf("%d producer errors during the outage (first: %v); %d jobs handled twice", len(errs), errs[0], dups)
}
