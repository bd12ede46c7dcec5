package share_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/internal/share"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// turns holds a Set's one slot on lane "hold", lets four workers of lane a
// (weight wa) and four of lane b (weight wb) wait for it, then gives it
// back, and returns the order in which the lanes got it.
func turns(t *testing.T, strict bool, wa, wb int) string {
	var order strings.Builder
	synctest.Test(t, func(t *testing.T) {
		s := share.New[string](1, strict)
		hold := s.Join("hold", 1, 1, "hold")
		a, b := s.Join("a", wa, 4, "a"), s.Join("b", wb, 4, "b")
		if !s.Acquire(t.Context(), hold, make(chan struct{}, 1), time.Hour, nil) {
			t.Fatal("the first Acquire of a free slot failed")
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, l := range []*share.Lane[string]{a, a, a, a, b, b, b, b} {
			wg.Go(func() {
				if !s.Acquire(t.Context(), l, make(chan struct{}, 1), time.Hour, nil) {
					t.Error("Acquire failed")
					return
				}
				mu.Lock()
				for _, snap := range s.Snapshot() {
					if snap.Running == 1 {
						order.WriteString(snap.X)
					}
				}
				mu.Unlock()
				s.Release(l, time.Second)
			})
		}
		synctest.Wait() // every worker waits
		if got := s.Snapshot(); got[1].Waiting != 4 || got[2].Waiting != 4 {
			t.Fatalf("waiting %d and %d; want 4 and 4", got[1].Waiting, got[2].Waiting)
		}
		s.Release(hold, 0)
		wg.Wait()
		for _, snap := range s.Snapshot()[1:] {
			if snap.Turns != 4 || snap.Busy != 4*time.Second || snap.Running != 0 {
				t.Errorf("lane %s: %+v; want 4 turns, 4s busy, none running", snap.Name, snap)
			}
		}
	})
	return order.String()
}

func TestWeightedTakesTurnsByWeight(t *testing.T) {
	if got := turns(t, false, 3, 1); got != "abaaabbb" {
		t.Errorf("turns %q; want abaaabbb (a three times as often while both wait)", got)
	}
}

func TestStrictServesHigherWeightFirst(t *testing.T) {
	if got := turns(t, true, 1, 2); got != "bbbbaaaa" {
		t.Errorf("turns %q; want bbbbaaaa", got)
	}
}

// TestAcquireGivesUpWhenRenewFails: a worker waiting for a slot stops when
// renew reports false, and a cancelled ctx stops it too.
func TestAcquireGivesUpWhenRenewFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := share.New[struct{}](1, false)
		l := s.Join("l", 1, 1, struct{}{})
		if !s.Acquire(t.Context(), l, make(chan struct{}, 1), time.Hour, nil) {
			t.Fatal("the first Acquire failed")
		}
		other := s.Join("o", 1, 1, struct{}{})
		renewals := 0
		if s.Acquire(t.Context(), other, make(chan struct{}, 1), time.Minute, func() bool { renewals++; return renewals < 3 }) {
			t.Fatal("Acquire of a held slot succeeded")
		}
		if renewals != 3 {
			t.Errorf("renew called %d times; want 3", renewals)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if s.Acquire(ctx, other, make(chan struct{}, 1), time.Minute, nil) {
			t.Fatal("Acquire with a cancelled ctx succeeded")
		}
		if snap := s.Snapshot(); snap[1].Waiting != 0 || snap[0].Running != 1 {
			t.Errorf("after giving up: %+v; want nobody waiting, l running", snap)
		}
	})
}
