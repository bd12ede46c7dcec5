package pool_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-go/corral/pool"
)

// outcome is how one submitted task ended.
type outcome int

const (
	pending outcome = iota
	ranOK
	ranFailed
	ranPanicked
	rejected
	refused
	evicted
	skipped
	abandoned
)

var outcomeNames = [...]string{"pending", "ran-ok", "failed", "panicked", "rejected", "refused",
	"evicted", "skipped", "abandoned"}

type idKey struct{}

// ledger records the outcome of every task by id; a second outcome for an id is an error.
type ledger struct {
	mu    sync.Mutex
	out   map[int]outcome
	twice []string
}

func (l *ledger) set(id int, o outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev := l.out[id]; prev != pending {
		l.twice = append(l.twice, outcomeNames[prev]+" then "+outcomeNames[o])
	}
	l.out[id] = o
}

var errChaos = errors.New("chaos failure")

// TestChaosAccounting submits a random mix of tasks (succeed, fail, panic, call runtime.Goexit,
// block on their context) under every policy, through Submit, Call and groups, from submitters
// whose contexts get cancelled, and closes the pool with a short deadline in the middle. Every
// submit must end as exactly one of ran-ok, failed, panicked, rejected, dropped (refused or
// evicted), skipped or abandoned; every handle must resolve; and Stats must agree.
func TestChaosAccounting(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	for _, policy := range []pool.Overflow{pool.Block, pool.Reject, pool.DropNewest, pool.DropOldest, pool.CallerRuns} {
		chaosRound(t, policy, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
	}
}

func chaosRound(t *testing.T, policy pool.Overflow, rng *rand.Rand) {
	l := &ledger{out: map[int]outcome{}}
	var groupDrops [pool.ReasonShutdown + 1]atomic.Int64
	timed := rng.IntN(2) == 0
	opts := []pool.Option{
		pool.WithOverflow(policy),
		pool.WithIdleTimeout(time.Duration(rng.IntN(2)) * time.Millisecond),
		onDrop(func(ctx context.Context, r pool.Reason) {
			id, ok := ctx.Value(idKey{}).(int)
			if !ok { // a group task: its context is the group's
				groupDrops[r].Add(1)
				return
			}
			l.set(id, map[pool.Reason]outcome{pool.ReasonRefused: refused, pool.ReasonEvicted: evicted,
				pool.ReasonExpired: skipped, pool.ReasonShutdown: abandoned}[r])
		}),
	}
	if timed {
		opts = append(opts, pool.WithTimings())
	}
	p := pool.New(1+rng.IntN(4), rng.IntN(5), opts...)

	const submitters, perSubmitter = 4, 60
	type call struct {
		id  int
		h   *pool.Handle[int]
		err error
	}
	var (
		mu        sync.Mutex
		calls     []call
		plainErrs = map[int]error{}
		groupIDs  atomic.Int64
	)
	release := make(chan struct{}) // ends the blocking tasks that Close has not cancelled yet
	task := func(id, kind int) func(context.Context) error {
		return func(ctx context.Context) error {
			switch kind {
			case 0:
				l.set(id, ranOK)
				return nil
			case 1:
				l.set(id, ranFailed)
				return errChaos
			case 2:
				l.set(id, ranPanicked)
				panic(id)
			case 4:
				l.set(id, ranFailed)
				runtime.Goexit()
				return nil
			default:
				select {
				case <-ctx.Done():
					l.set(id, ranFailed)
					return context.Cause(ctx)
				case <-release:
					l.set(id, ranOK)
					return nil
				}
			}
		}
	}
	groups := []*pool.Group{p.Group(bg)}
	gctx, gcancel := context.WithCancel(bg)
	groups = append(groups, p.Group(gctx))

	var attempts atomic.Int64
	closeAt := int64(submitters*perSubmitter/2 + rng.IntN(submitters*perSubmitter/2))
	releaseAt := int64(rng.IntN(submitters * perSubmitter / 4))
	closeNow := make(chan struct{})
	var closeOnce, releaseOnce sync.Once
	var wg sync.WaitGroup
	for s := range submitters {
		seed1, seed2 := rng.Uint64(), rng.Uint64()
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed1, seed2))
			for i := range perSubmitter {
				switch attempts.Add(1) {
				case closeAt:
					closeOnce.Do(func() { close(closeNow) })
				case releaseAt:
					releaseOnce.Do(func() { close(release) })
				}
				id := s*perSubmitter + i
				// 0 ok, 1 fail, 2 panic, 3 block, 4 runtime.Goexit
				kind := [...]int{0, 0, 0, 0, 1, 1, 2, 3, 4}[rng.IntN(9)]
				ctx := context.WithValue(bg, idKey{}, id)
				var cancel context.CancelFunc = func() {}
				if rng.IntN(3) == 0 {
					ctx, cancel = context.WithCancel(ctx)
				}
				if rng.IntN(8) == 0 {
					cancel() // already cancelled when submitted
				}
				how := rng.IntN(4)
				switch how {
				case 0, 1:
					err := p.Submit(ctx, task(id, kind))
					mu.Lock()
					plainErrs[id] = err
					mu.Unlock()
					if err != nil && !errors.Is(err, pool.ErrDropped) {
						l.set(id, rejected)
					}
				case 2:
					h, err := pool.Call(ctx, p, func(ctx context.Context) (int, error) {
						return id, task(id, kind)(ctx)
					})
					mu.Lock()
					calls = append(calls, call{id, h, err})
					mu.Unlock()
					if err != nil && !errors.Is(err, pool.ErrDropped) {
						l.set(id, rejected)
					}
				default:
					groupIDs.Add(1)
					g := groups[rng.IntN(len(groups))]
					if kind == 3 {
						kind = 0 // group tasks do not block: their context is shared
					}
					g.Go(task(-1-id, kind))
				}
				if rng.IntN(2) == 0 {
					cancel()
				} else {
					defer cancel()
				}
			}
		})
	}
	closed := make(chan error, 1)
	go func() {
		select {
		case <-closeNow:
		case <-time.After(time.Duration(2000+rng.IntN(8000)) * time.Microsecond):
		}
		gcancel()
		ctx, cancel := context.WithTimeout(bg, time.Duration(rng.IntN(3000))*time.Microsecond)
		defer cancel()
		closed <- p.Close(ctx)
	}()
	wg.Wait()
	closeErr := <-closed
	for _, g := range groups {
		_ = g.Wait()
	}
	releaseOnce.Do(func() { close(release) })

	s := p.Stats()
	if s.Running != 0 || s.Queued != 0 || s.Waiting != 0 || s.Workers != 0 {
		t.Fatalf("%v: pool not empty after Close: %+v", policy, s)
	}
	checkIdentity(t, s)
	if timed {
		checkTimings(t, s) // every task that ran, by every path, is timed once
	}
	if len(l.twice) > 0 {
		t.Fatalf("%v: tasks with two outcomes: %v", policy, l.twice)
	}
	var count [abandoned + 1]uint64
	var groupRan uint64
	for id, o := range l.out {
		if id < 0 {
			groupRan++
		}
		count[o]++
	}
	// Every plain and Call task has exactly one outcome, consistent with what Submit returned.
	for id, err := range plainErrs {
		o := l.out[id]
		switch {
		case o == pending:
			t.Errorf("%v: task %d (Submit = %v) has no outcome", policy, id, err)
		case err == nil && (o == rejected || o == refused):
			t.Errorf("%v: task %d accepted but %s", policy, id, outcomeNames[o])
		case errors.Is(err, pool.ErrDropped) && o != refused:
			t.Errorf("%v: task %d refused but %s", policy, id, outcomeNames[o])
		}
	}
	for _, c := range calls {
		select {
		case <-c.h.Done():
		default:
			t.Fatalf("%v: handle of task %d not resolved after Close", policy, c.id)
		}
		v, err := c.h.Wait(bg)
		var pe *pool.PanicError
		ok := false
		switch o := l.out[c.id]; o {
		case ranOK:
			ok = err == nil && v == c.id
		case ranFailed:
			ok = err != nil && !errors.As(err, &pe)
		case ranPanicked:
			ok = errors.As(err, &pe) && pe.Value == c.id
		case rejected:
			ok = err != nil && err == c.err
		case refused:
			ok = errors.Is(err, pool.ErrDropped) && c.err == err
		case evicted:
			ok = errors.Is(err, pool.ErrDropped) && !errors.Is(err, pool.ErrClosed)
		case skipped:
			ok = errors.Is(err, pool.ErrExpired)
		case abandoned:
			ok = errors.Is(err, pool.ErrDropped) && errors.Is(err, pool.ErrClosed)
		}
		if !ok {
			t.Errorf("%v: task %d ended %s but its handle says %v, %v", policy, c.id, outcomeNames[l.out[c.id]], v, err)
		}
	}
	// Stats agrees with the ledger (group tasks that did not run are seen by Hooks.OnDrop or
	// were rejected because the pool had closed).
	if s.Completed != count[ranOK] || s.Failed != count[ranFailed] || s.Panicked != count[ranPanicked] {
		t.Errorf("%v: ran ok/failed/panicked: stats %d/%d/%d, ledger %d/%d/%d", policy,
			s.Completed, s.Failed, s.Panicked, count[ranOK], count[ranFailed], count[ranPanicked])
	}
	if s.Dropped.Refused != count[refused]+uint64(groupDrops[pool.ReasonRefused].Load()) ||
		s.Dropped.Evicted != count[evicted]+uint64(groupDrops[pool.ReasonEvicted].Load()) ||
		s.Dropped.Shutdown != count[abandoned]+uint64(groupDrops[pool.ReasonShutdown].Load()) ||
		s.Skipped != count[skipped]+uint64(groupDrops[pool.ReasonExpired].Load()) {
		t.Errorf("%v: drops: stats %+v skipped %d; ledger refused %d evicted %d abandoned %d skipped %d; groups %v",
			policy, s.Dropped, s.Skipped, count[refused], count[evicted], count[abandoned], count[skipped], &groupDrops)
	}
	groupRejected := s.Rejected - count[rejected]
	groupAccounted := groupRan + groupRejected + uint64(groupDrops[pool.ReasonRefused].Load()+
		groupDrops[pool.ReasonEvicted].Load()+groupDrops[pool.ReasonShutdown].Load()+groupDrops[pool.ReasonExpired].Load())
	if s.Submitted != uint64(len(plainErrs)+len(calls))+uint64(groupIDs.Load()) ||
		groupAccounted != uint64(groupIDs.Load()) {
		t.Errorf("%v: submitted %d: plain %d, calls %d, group %d (accounted %d)", policy,
			s.Submitted, len(plainErrs), len(calls), groupIDs.Load(), groupAccounted)
	}
	if (closeErr == nil) != (s.Dropped.Shutdown == 0 && !closedEarly(closeErr)) {
		t.Errorf("%v: Close = %v with %d abandoned", policy, closeErr, s.Dropped.Shutdown)
	}
	t.Logf("%v: %+v", policy, s)
}

// closedEarly reports whether Close's error says that only running tasks were cancelled.
func closedEarly(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "pool: close: 0 queued tasks abandoned")
}
