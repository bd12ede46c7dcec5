package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/lease"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// run starts a keeper of n slots with lease, and returns it, its slots and a
// stop that ends its Run and waits for it.
func run(t *testing.T, n int, d time.Duration) (*lease.Keeper, []*lease.Slot, func()) {
	slots := make([]*lease.Slot, n)
	for i := range slots {
		slots[i] = new(lease.Slot)
	}
	done := make(chan struct{})
	k := lease.New(t.Context(), d, slots, done)
	var wg sync.WaitGroup
	wg.Go(k.Run)
	return k, slots, func() { close(done); wg.Wait() }
}

// A handler is cancelled with ErrLeaseExpired once it has run for the
// lease, and at most one sampling period (lease/16) later; End reports the
// expiry, and the next Start gives a live context.
func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 16 * time.Millisecond
		k, slots, stop := run(t, 2, d)
		defer stop()
		start := time.Now()
		ctxs := []context.Context{k.Start(slots[0]), k.Start(slots[1])}
		for i, ctx := range ctxs {
			<-ctx.Done()
			if got := time.Since(start); got < d || got > d+d/16 {
				t.Errorf("slot %d cancelled after %v, want within [%v, %v]", i, got, d, d+d/16)
			}
			if cause := context.Cause(ctx); cause != driver.ErrLeaseExpired {
				t.Errorf("slot %d: cause %v, want ErrLeaseExpired", i, cause)
			}
		}
		synctest.Wait() // the keeper's look that expired them is over
		for i, s := range slots {
			if !s.End() {
				t.Errorf("slot %d: End of an expired handler reported false", i)
			}
		}
		next := k.Start(slots[0])
		if next.Err() != nil {
			t.Fatalf("the next job starts with a done context: %v", context.Cause(next))
		}
		if slots[0].End() {
			t.Error("End of a handler that returned in time reported expired")
		}
		if slots[0].Context() != next {
			t.Error("Context is not the last handler's")
		}
	})
}

// The keeper parks, without a clock, while no handler runs, and samples
// with a fresh reading once one starts.
func TestParkDropsTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, slots, stop := run(t, 1, time.Second)
		defer stop()
		synctest.Wait()
		if got, ok := k.Now(); ok {
			t.Errorf("idle keeper's clock %v, want none", got)
		}
		k.Start(slots[0])
		synctest.Wait()
		if got, ok := k.Now(); !ok || !got.Equal(time.Now()) {
			t.Errorf("keeper's clock %v (%v) while a handler runs, want %v", got, ok, time.Now())
		}
		slots[0].End()
		time.Sleep(time.Hour)
		if got, ok := k.Now(); ok {
			t.Errorf("keeper's clock %v an hour after the handler ended, want none", got)
		}
	})
}

// A claim acts on the handler it claimed: Cancel reaches it, ClaimGen
// fails once the worker moved on, and Claim fails while no handler runs.
func TestClaim(t *testing.T) {
	k, slots, stop := run(t, 1, time.Hour)
	defer stop()
	s := slots[0]
	if _, ok := s.Claim(); ok {
		t.Fatal("Claim succeeded with no handler running")
	}
	ctx := k.Start(s)
	gen, ok := s.Claim()
	if !ok {
		t.Fatal("Claim failed on a running handler")
	}
	s.Cancel(driver.ErrLeaseLost)
	s.Release(gen)
	if cause := context.Cause(ctx); cause != driver.ErrLeaseLost {
		t.Errorf("cause %v, want ErrLeaseLost", cause)
	}
	if !s.ClaimGen(gen) {
		t.Fatal("ClaimGen failed on the same running handler")
	}
	s.Release(gen)
	if s.End() {
		t.Error("End reported a cancelled (not expired) handler as expired")
	}
	if s.ClaimGen(gen) {
		t.Error("ClaimGen succeeded after the handler ended")
	}
	next := k.Start(s)
	if s.ClaimGen(gen) {
		t.Error("ClaimGen succeeded on the next handler")
	}
	if next.Err() != nil {
		t.Errorf("the next handler's context is done: %v", context.Cause(next))
	}
	s.End()
}

// Under a stream of claims, each Cancel reaches exactly the handler it
// claimed: as many handlers see a cause as claims cancelled one, however
// the claims fall between Start and End.
func TestClaimsRaceTheWorker(t *testing.T) {
	k, slots, stop := run(t, 1, time.Hour)
	defer stop()
	s := slots[0]
	errClaimed := errors.New("claimed")
	const jobs = 2000
	quit := make(chan struct{})
	var cancels int
	var wg sync.WaitGroup
	wg.Go(func() {
		last := ^uint64(0)
		for {
			select {
			case <-quit:
				return
			default:
			}
			gen, ok := s.Claim()
			if !ok {
				continue
			}
			if gen != last {
				s.Cancel(errClaimed)
				cancels++
				last = gen
			}
			s.Release(gen)
		}
	})
	seen := 0
	for range jobs {
		ctx := k.Start(s)
		if s.End() {
			t.Fatal("End reported an expiry with an hour's lease")
		}
		switch cause := context.Cause(ctx); cause {
		case nil:
		case errClaimed:
			seen++
		default:
			t.Fatalf("cause %v", cause)
		}
	}
	close(quit)
	wg.Wait()
	if seen != cancels {
		t.Errorf("%d handlers saw a cancel, %d claims cancelled one", seen, cancels)
	}
}
