package queuetest

import (
	"context"
	"errors"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// testUniqueFor holds a backend to unique keys (driver.Message.Unique): a key is held while its
// job is stored (waiting, then running) and for the job's own period after it left (acked,
// or dead-lettered), each refused enqueue returning the holder's ID and ErrNotUnique, and
// storing nothing; a job with no period frees its key as it leaves; a redriven dead letter
// holds no key.
func testUniqueFor(e *env) {
	period := 10 * e.unit
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	bg := context.Background()
	refused := func(what, key, holder string) {
		e.Helper()
		if id, err := q.Enqueue(bg, "again", queue.WithUnique(key, period)); !errors.Is(err, queue.ErrNotUnique) || id != holder {
			e.Fatalf("Enqueue of %s while %s: %q, %v; want %s and ErrNotUnique", key, what, id, err, holder)
		}
	}
	first := e.enqueue(q, "first", queue.WithUnique("u", period))
	quick := e.enqueue(q, "quick", queue.WithUnique("q", 0))
	poison := e.enqueue(q, "poison", queue.WithUnique("p", period))
	refused("its job waits", "u", first)
	refused("its job waits", "q", quick)
	release := make(chan struct{})
	running := make(chan struct{}, 1)
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		switch j.Payload {
		case "first":
			running <- struct{}{}
			<-release
		case "poison":
			return retry.Permanent(errBoom)
		}
		return nil
	})
	recv(e, running, "first running")
	refused("its job runs", "u", first)
	close(release)
	acked := map[string]bool{}
	for len(acked) < 2 {
		acked[recv(e, ev.acked, "first and quick acked").ID] = true
	}
	ended := time.Now()
	recv(e, ev.dead, "poison dead-lettered")
	refused("its job was acked within the period", "u", first)
	refused("its job was dead-lettered within the period", "p", poison)
	// No period: the key is free once the job left.
	if _, err := q.Enqueue(bg, "quick again", queue.WithUnique("q", 0)); err != nil {
		e.Fatalf("Enqueue of q after its job left, with no period: %v", err)
	}
	// A redriven dead letter holds no key: p stays held by the dead letter's period alone.
	if err := q.Redrive(bg, poison); err != nil {
		e.Fatalf("Redrive: %v", err)
	}
	if e.virtual {
		time.Sleep(period - time.Since(ended) - e.unit)
		refused("just inside the period", "u", first)
	}
	time.Sleep(time.Until(ended.Add(period + e.unit)))
	for _, key := range []string{"u", "p"} {
		if _, err := q.Enqueue(bg, "after", queue.WithUnique(key, period)); err != nil {
			e.Errorf("Enqueue of %s after the period: %v", key, err)
		}
	}
}
