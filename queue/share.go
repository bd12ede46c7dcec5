package queue

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/corral-go/corral/queue/internal/share"
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
	size int // 0 in a zero Share
	mode Sharing
	set  *share.Set[func(context.Context) (Stats, error)] // a lane keeps its queue's Stats
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
	return &Share{size: workers, mode: s, set: share.New[func(context.Context) (Stats, error)](workers, s == Strict)}
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
	case weight < 1 || weight > share.MaxWeight:
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
	lanes := sh.set.Snapshot()
	out := make([]ShareStats, len(lanes))
	var total time.Duration
	for _, l := range lanes {
		total += l.Busy
	}
	var errs []error
	for i, l := range lanes {
		out[i] = ShareStats{Name: l.Name, Weight: l.Weight, Cap: l.Cap, Running: l.Running,
			Waiting: l.Waiting, Turns: l.Turns, Busy: l.Busy}
		if total > 0 {
			out[i].Share = float64(l.Busy) / float64(total)
		}
		s, err := l.X(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[i].Depth, out[i].Lag = s.Ready, s.Lag
	}
	return out, errors.Join(errs...)
}

// lane is one consumer's place in a Share.
type lane = share.Lane[func(context.Context) (Stats, error)]

// join adds a consumer's lane to sh: its name and weight (WithShare), its
// cap (WithWorkers) and its queue's Stats.
func (sh *Share) join(name string, weight, limit int, stats func(context.Context) (Stats, error)) *lane {
	return sh.set.Join(name, weight, limit, stats)
}

// leave takes l out of sh, once its consumer's workers have returned.
func (sh *Share) leave(l *lane) { sh.set.Leave(l) }

// acquire waits for a slot for l, and reports whether it got one; false if
// ctx ended first. grant is the worker's own channel (capacity 1), through
// which a slot is handed over. While it waits, renew is called every
// renewEvery; if renew reports false, acquire gives up and returns false.
func (sh *Share) acquire(ctx context.Context, l *lane, grant chan struct{}, renewEvery time.Duration, renew func() bool) bool {
	return sh.set.Acquire(ctx, l, grant, renewEvery, renew)
}

// release gives back the slot l held for busy.
func (sh *Share) release(l *lane, busy time.Duration) { sh.set.Release(l, busy) }
