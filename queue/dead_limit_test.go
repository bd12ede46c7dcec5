package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/corral-go/corral/retry"
)

// The dead letters are bounded: at the limit the oldest is evicted, counted
// in Stats.DeadEvicted and reported to OnDeadEvicted with the ctx of the
// call that made room; the newest are kept, oldest first. Evictions made by
// an Enqueue's DropOldest are reported too.
func TestDeadLetterLimitEvictsOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu      sync.Mutex
			evicted []string
		)
		q, err := New[string](context.Background(), WithDeadLetterLimit(3), WithCapacity(1), WithOverflow(DropOldest),
			WithHooks(Hooks{OnDeadEvicted: func(ctx context.Context, ev Event) {
				if ctx == nil {
					t.Error("OnDeadEvicted without a ctx")
				}
				mu.Lock()
				evicted = append(evicted, ev.ID)
				mu.Unlock()
			}}))
		if err != nil {
			t.Fatal(err)
		}
		// Four jobs through a queue of capacity 1: three evicted by DropOldest
		// (dead letters 1, 2, 3), the last one stays.
		for i := 1; i <= 4; i++ {
			enqueueOK(t, q, fmt.Sprint(i), WithID(fmt.Sprint(i)))
		}
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			return retry.Permanent(errors.New("no"))
		}, WithWorkers(1))
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		enqueueOK(t, q, "5", WithID("5"))
		synctest.Wait()
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		var dead []string
		for dl, err := range q.DeadLetters(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			dead = append(dead, dl.Job.ID)
		}
		if !slices.Equal(dead, []string{"3", "4", "5"}) {
			t.Errorf("dead letters %v, want [3 4 5]", dead)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(evicted, []string{"1", "2"}) {
			t.Errorf("OnDeadEvicted saw %v, want [1 2]", evicted)
		}
		if s, _ := q.Stats(context.Background()); s.DeadEvicted != 2 || s.Dead != 3 || s.DeadLetteredTotal() != 5 {
			t.Errorf("stats %+v: want 2 evicted, 3 dead letters, 5 dead-lettered", s)
		}
	})
}
