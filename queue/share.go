package queue

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Share is a budget of workers that several consumers share, of one queue
// or of several queues with different payload types: a consumer started with
// [WithShare] runs a handler only while it holds one of the Share's slots,
// and each slot that frees goes to a waiting consumer chosen by the Share's
// [Sharing]. A consumer's [WithWorkers] caps how many slots it may hold at
// once, so that a bulk queue never takes every worker.
//
//	sh := queue.NewShare(8, queue.Weighted)
//	users, _ := userQ.Consume(ctx, h1, queue.WithShare(sh, "users", 6))
//	bulk, _ := bulkQ.Consume(ctx, h2, queue.WithShare(sh, "bulk", 1), queue.WithWorkers(2))
//
// A consumer's worker receives a job first and then waits for a slot, so a
// consumer with no work holds no slot and leaves its turns to the others
// (the Share is work-conserving). So that a consumer with a backlog always
// has a job in hand when a slot frees, it runs as many receiving loops
// again as its WithWorkers: besides the jobs it handles, it holds up to
// that many leased, waiting for a turn (their leases renewed meanwhile, no
// attempt spent; Close gives them back). A consumer whose queue was empty
// comes back with no credit for the turns it did not use: it cannot crowd
// the others out to catch up.
//
// A Share starts no goroutine and needs no Close: its consumers own their
// workers. It is safe for concurrent use. Make one with [NewShare]: a zero
// Share panics when a consumer uses it.
type Share struct {
	size int
	mode Sharing

	mu      sync.Mutex // guards the fields below
	free    int        // slots not held
	waiting int        // workers waiting for a slot, over every lane
	pass    uint64     // the pass of the last turn given (see lane.pass)
	lanes   []*lane    // the consumers, in the order they joined
}

// Sharing is how a [Share] gives its free slots to the consumers waiting
// for one.
type Sharing int

const (
	// Weighted gives each consumer that has work turns in proportion to
	// its weight: while two consumers of weights 6 and 1 both have jobs
	// waiting, the first starts 6 jobs for each job of the second (stride
	// scheduling: over any run of turns, a consumer's count stays within
	// one turn or so of its proportion). With handlers of equal length, the
	// shares of worker time follow the weights too.
	Weighted Sharing = iota
	// Strict gives a free slot to the waiting consumer of the highest
	// weight (its priority), and to a lower one only when no higher one has
	// a job waiting (or those that have are at their cap); consumers of
	// equal weight take turns.
	Strict
)

// String returns the sharing's name.
func (s Sharing) String() string {
	switch s {
	case Weighted:
		return "weighted"
	case Strict:
		return "strict"
	}
	return "Sharing(" + strconv.Itoa(int(s)) + ")"
}

// NewShare returns a Share of workers slots, given out as s says. It panics
// if workers < 1 or s is not Weighted or Strict.
func NewShare(workers int, s Sharing) *Share {
	switch {
	case workers < 1:
		panic("queue: NewShare(" + strconv.Itoa(workers) + "): need at least 1 worker")
	case s != Weighted && s != Strict:
		panic("queue: NewShare: unknown sharing " + s.String())
	}
	return &Share{size: workers, mode: s, free: workers}
}

// WithShare runs the consumer's handlers on the slots of sh, under the name
// (for [Share.Stats]) and the weight given: its share of turns under
// [Weighted], its priority under [Strict]. The consumer's [WithWorkers]
// caps the slots it may hold at once; without it, the consumer may hold all
// of sh's. It panics if sh is nil or weight is not from 1 to 1,000,000.
func WithShare(sh *Share, name string, weight int) ConsumerOption {
	switch {
	case sh == nil:
		panic("queue: WithShare(nil): nil share")
	case weight < 1 || weight > maxWeight:
		panic("queue: WithShare(" + strconv.Quote(name) + ", " + strconv.Itoa(weight) + "): need a weight from 1 to 1000000")
	}
	return consumerOptionFunc(func(o *consumerOptions) { o.share, o.shareName, o.shareWeight = sh, name, weight })
}

// ShareStats is one consumer of a [Share] at one instant.
type ShareStats struct {
	// Name and Weight are those given to [WithShare]; Cap is the most
	// slots the consumer may hold (its [WithWorkers], at most the Share's
	// size).
	Name   string
	Weight int
	Cap    int
	// Running counts the slots the consumer holds now; Waiting its jobs
	// received and waiting for a slot.
	Running int
	Waiting int
	// Turns counts the slots the consumer was given since it joined.
	Turns uint64
	// Busy is the worker time the consumer has used since it joined: the
	// sum of the times its slots were held (handling and settling jobs).
	Busy time.Duration
	// Share is Busy over the sum of the Busy of every consumer in the
	// Share (0 while none has used any).
	Share float64
	// Depth and Lag are the consumer's queue's [Stats.Ready] and
	// [Stats.Lag].
	Depth int
	Lag   time.Duration
}

// Stats returns the consumers of sh that are not closed, in the order they
// joined. Depth and Lag are read from their queues with ctx; an error
// reading one is returned, joined to the others, and leaves its Depth and
// Lag zero.
func (sh *Share) Stats(ctx context.Context) ([]ShareStats, error) {
	sh.mu.Lock()
	out := make([]ShareStats, len(sh.lanes))
	queues := make([]func(context.Context) (Stats, error), len(sh.lanes))
	var total time.Duration
	for i, l := range sh.lanes {
		out[i] = ShareStats{Name: l.name, Weight: l.weight, Cap: l.cap, Running: l.running,
			Waiting: len(l.waiters), Turns: l.turns, Busy: l.busy}
		queues[i] = l.stats
		total += l.busy
	}
	sh.mu.Unlock()
	var errs []error
	for i := range out {
		if total > 0 {
			out[i].Share = float64(out[i].Busy) / float64(total)
		}
		s, err := queues[i](ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[i].Depth, out[i].Lag = s.Ready, s.Lag
	}
	return out, errors.Join(errs...)
}

// lane is one consumer's place in a Share.
type lane struct {
	name   string
	weight int
	cap    int
	stride uint64                               // the pass a turn costs: strideOne / weight
	stats  func(context.Context) (Stats, error) // the consumer's queue's Stats

	// Guarded by the Share's mu.
	pass    uint64          // stride scheduling's pass: the lowest pass waiting goes first
	waiters []chan struct{} // the workers waiting for a slot, oldest first
	running int
	turns   uint64
	busy    time.Duration
}

// strideOne is the pass of a turn at weight 1; maxWeight keeps a stride of
// at least 4,294 (a rounding error under 0.03%).
const (
	strideOne = 1 << 32
	maxWeight = 1_000_000
)

// rebaseAt is the pass past which giveLocked moves every pass down, so
// that passes never wrap around.
const rebaseAt = 1 << 62

// join adds a consumer's lane to sh.
func (sh *Share) join(name string, weight, limit int, stats func(context.Context) (Stats, error)) *lane {
	l := &lane{name: name, weight: weight, cap: min(limit, sh.size), stride: strideOne / uint64(weight), stats: stats}
	sh.mu.Lock()
	sh.lanes = append(sh.lanes, l)
	sh.mu.Unlock()
	return l
}

// leave takes l out of sh, once its consumer's workers have returned.
func (sh *Share) leave(l *lane) {
	sh.mu.Lock()
	sh.lanes = slices.DeleteFunc(sh.lanes, func(x *lane) bool { return x == l })
	sh.mu.Unlock()
}

// acquire waits for a slot for l, and reports whether it got one; false if
// ctx ended first. grant is the worker's own channel (capacity 1), through
// which a slot is handed over. While it waits, renew is called every
// renewEvery; if renew reports false, acquire gives up and returns false.
func (sh *Share) acquire(ctx context.Context, l *lane, grant chan struct{}, renewEvery time.Duration, renew func() bool) bool {
	sh.mu.Lock()
	if sh.free > 0 && sh.waiting == 0 && l.running < l.cap {
		sh.giveLocked(l)
		sh.mu.Unlock()
		return true
	}
	if len(l.waiters) == 0 && l.running == 0 {
		// Back from idle: no credit for the turns it did not take.
		l.pass = max(l.pass, sh.pass)
	}
	l.waiters = append(l.waiters, grant)
	sh.waiting++
	sh.dispatchLocked()
	sh.mu.Unlock()

	t := time.NewTimer(renewEvery)
	defer t.Stop()
	for {
		select {
		case <-grant:
			return true
		case <-ctx.Done():
		case <-t.C:
			if renew() {
				t.Reset(renewEvery)
				continue
			}
		}
		return sh.withdraw(l, grant)
	}
}

// withdraw takes the waiting worker with grant off l's waiters, and
// reports false; if the slot was given to it meanwhile, it gives the slot
// back.
func (sh *Share) withdraw(l *lane, grant chan struct{}) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if i := slices.Index(l.waiters, grant); i >= 0 {
		l.waiters = slices.Delete(l.waiters, i, i+1)
		sh.waiting--
		return false
	}
	<-grant // given meanwhile: the send happened under mu
	sh.releaseLocked(l, 0)
	return false
}

// release gives back the slot l held for busy.
func (sh *Share) release(l *lane, busy time.Duration) {
	sh.mu.Lock()
	sh.releaseLocked(l, busy)
	sh.mu.Unlock()
}

// releaseLocked is release, with sh.mu held.
func (sh *Share) releaseLocked(l *lane, busy time.Duration) {
	sh.free++
	l.running--
	l.busy += busy
	sh.dispatchLocked()
}

// giveLocked gives l a slot. sh.mu held.
func (sh *Share) giveLocked(l *lane) {
	sh.free--
	l.running++
	l.turns++
	sh.pass = l.pass
	l.pass += l.stride
	if sh.pass > rebaseAt {
		// Every lane waiting has a pass at or above sh.pass, less a stride;
		// a lower one (idle, or held back by its cap) goes first anyway.
		base := sh.pass - strideOne
		for _, x := range sh.lanes {
			x.pass = max(x.pass, base) - base
		}
		sh.pass -= base
	}
}

// dispatchLocked hands the free slots to the waiting workers, as the
// Sharing says. sh.mu held.
func (sh *Share) dispatchLocked() {
	for sh.free > 0 && sh.waiting > 0 {
		l := sh.nextLocked()
		if l == nil {
			return // every lane waiting is at its cap
		}
		grant := l.waiters[0]
		l.waiters = slices.Delete(l.waiters, 0, 1)
		sh.waiting--
		sh.giveLocked(l)
		grant <- struct{}{} // capacity 1, and its worker waits on nothing else
	}
}

// nextLocked returns the lane whose waiting worker goes next: the lowest
// pass (Weighted), or the highest weight and then the lowest pass
// (Strict); ties go to the lane that joined first. Lanes at their cap wait.
// It returns nil if every lane waiting is at its cap. sh.mu held.
func (sh *Share) nextLocked() *lane {
	var best *lane
	for _, l := range sh.lanes {
		if len(l.waiters) == 0 || l.running >= l.cap {
			continue
		}
		if best == nil || sh.mode == Strict && l.weight > best.weight ||
			(sh.mode == Weighted || l.weight == best.weight) && l.pass < best.pass {
			best = l
		}
	}
	return best
}
