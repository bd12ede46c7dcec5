package postgres

import (
	"context"
	"sync"
)

// A group makes the settling calls of one kind (Start, or Ack of a queue without a capacity)
// that come while one of them is being made into one query: a call that finds none under way
// makes its own, and the calls that came meanwhile are made by a goroutine (the group's
// runner) in one query, then those that came during that one, until none waits. A call alone
// costs the round trip it did before; calls of many workers at once cost one between them.
//
// The grouped statement skips the rows another transaction holds (an AckTx in progress)
// instead of waiting for them, so that one held row never holds up the others' calls; a call
// whose job the statement did not settle (its row held, or its lease lost) is made alone by
// its caller, as before, which then decides.
type group struct {
	// run makes the grouped statement for keys, and returns the seqs of the jobs it settled.
	run func(ctx context.Context, keys []leaseKey) ([]int64, error)
	// call bounds each query (Backend.call).
	call func(ctx context.Context) (context.Context, context.CancelFunc)

	mu      sync.Mutex // guards the fields below
	queue   []*groupReq
	running bool          // a runner runs
	exit    chan struct{} // closed by the runner that runs, when it returns
	stopped bool          // set by stop: calls are made alone
}

// leaseKey is a delivery's job (seq) and lease number.
type leaseKey struct{ seq, lease int64 }

type groupReq struct {
	key  leaseKey
	done chan groupResult // the result, once: buffered
}

type groupResult struct {
	settled bool
	err     error
}

// maxGroup bounds the calls one grouped query makes.
const maxGroup = 128

// do makes the call for key, and reports whether that settled its job; grouped is false if
// the group is stopped (the caller makes the call alone). A call that finds no query under
// way makes its own at once, with ctx, as a call alone would; one that finds a query under way
// waits for the next, which a runner goroutine makes for every call that came meanwhile. err
// is the query's (mapped by fail), or context.Cause(ctx) if ctx ended first (the call's
// outcome is then unknown, as that of a query cut short).
func (g *group) do(ctx context.Context, key leaseKey) (settled, grouped bool, err error) {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return false, false, nil
	}
	if !g.running {
		// No query under way (so none waits): make this one's now, then hand the calls
		// that came meanwhile to a runner.
		g.running = true
		g.exit = make(chan struct{})
		g.mu.Unlock()
		cctx, cancel := g.call(ctx)
		seqs, err := g.run(cctx, []leaseKey{key})
		cancel()
		g.mu.Lock()
		if len(g.queue) > 0 {
			go g.loop(g.exit) // owned by the group: it ends when no call waits; stop waits for it
		} else {
			g.running = false
			close(g.exit)
		}
		g.mu.Unlock()
		return len(seqs) == 1, true, err
	}
	req := &groupReq{key: key, done: make(chan groupResult, 1)}
	g.queue = append(g.queue, req)
	g.mu.Unlock()
	select {
	case res := <-req.done:
		return res.settled, true, res.err
	case <-ctx.Done():
		return false, true, context.Cause(ctx)
	}
}

// loop is the runner: it makes a grouped query for the calls waiting, maxGroup at most, until
// none waits; then it closes exit.
func (g *group) loop(exit chan struct{}) {
	var (
		batch []*groupReq
		keys  []leaseKey
	)
	for {
		g.mu.Lock()
		n := min(len(g.queue), maxGroup)
		if n == 0 {
			g.running = false
			close(exit)
			g.mu.Unlock()
			return
		}
		batch = append(batch[:0], g.queue[:n]...)
		clear(g.queue[:n])
		g.queue = g.queue[n:]
		g.mu.Unlock()
		keys = keys[:0]
		for _, r := range batch {
			keys = append(keys, r.key)
		}
		g.round(batch, keys)
	}
}

// round makes one grouped query, and answers its calls.
func (g *group) round(batch []*groupReq, keys []leaseKey) {
	ctx, cancel := g.call(context.Background())
	defer cancel()
	seqs, err := g.run(ctx, keys)
	settled := make(map[int64]bool, len(seqs))
	for _, s := range seqs {
		settled[s] = true
	}
	for _, r := range batch {
		r.done <- groupResult{settled: settled[r.key.seq], err: err}
	}
}

// stop makes later calls alone, and waits until the runner, if one runs, has answered the
// calls made before and returned, or until ctx ends.
func (g *group) stop(ctx context.Context) error {
	g.mu.Lock()
	g.stopped = true
	exit, running := g.exit, g.running
	g.mu.Unlock()
	if !running {
		return nil
	}
	return awaitExit(ctx, exit)
}

// awaitExit waits until exit is closed, or until ctx ends (and returns its cause).
func awaitExit(ctx context.Context, exit <-chan struct{}) error {
	select {
	case <-exit:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// arrays returns the seqs and lease numbers of keys, as the grouped statements take them.
func arrays(keys []leaseKey) (seqs, leases []int64) {
	seqs, leases = make([]int64, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		seqs[i], leases[i] = k.seq, k.lease
	}
	return seqs, leases
}
