package jetstream

import (
	"context"
	"sync"

	"github.com/corral-go/corral/queue/driver"
)

// An acked job's tombstone (on a 2.9 server) and the removal of its state record are not the
// ack's: the job is settled once the broker confirmed the ack. So Ack returns then, and leaves
// them to the aftermath, which makes them in the background, a few at a time, in the order of
// the acks. A process that dies before they are made leaves a state record that nothing reads
// again (it belongs to a job no longer stored; a 2.9 server that gives its sequence to another
// job gives another ID too, and such a record is ignored), and a job without its tombstone, as
// a process that died between the ack and the tombstone always did. Close waits for them
// within its ctx; if ctx ends first, the work not started is dropped (as in a process that
// dies) and the requests running are cancelled, and Delete waits for them to end. Beside that
// work, not behind it, the aftermath runs what a receiver hands back to the broker (see
// handOff), with the same ownership.
//
// Where the server removes a dropped record by itself (a state stream with per-message TTLs)
// and keeps no tombstones, Ack publishes the removal itself and does not wait for an answer
// (see dropSoon), and the aftermath counts the publish in flight as it counts its goroutines.
// Close then waits for one more removal's answer (see confirmDrops).

// aftermathWorkers bounds the aftermath's requests in flight; aftermathQueue bounds the acked
// jobs waiting for them, beyond which Ack makes them itself, before it returns.
const (
	aftermathWorkers = 4
	aftermathQueue   = 4096
)

// aftermath runs the work that follows acks, on goroutines that end when it has none.
type aftermath struct {
	mu      sync.Mutex
	todo    []func(context.Context) // guarded by mu
	workers int                     // goroutines running the queued work, guarded by mu
	running int                     // goroutines running, the workers and start's, guarded by mu
	closed  bool                    // guarded by mu: later work runs in its caller
	// unanswered says send made a publish that nobody answers: close confirms it. Guarded
	// by mu.
	unanswered bool
	idle       chan struct{} // guarded by mu: closed when the running goroutines end
	// base is the parent of the work's contexts, made with the first goroutine; abandon,
	// called by close, cancels it (cutting short the work still running when close's ctx
	// ended first). Both guarded by mu.
	base    context.Context
	abandon context.CancelFunc
}

// add hands work to the aftermath, or returns false (and the caller runs it) if the queue is
// full or the aftermath closed.
func (a *aftermath) add(b *Backend, work func(context.Context)) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || len(a.todo) >= aftermathQueue {
		return false
	}
	a.todo = append(a.todo, work)
	if a.workers < aftermathWorkers {
		a.workers++
		go a.run(b, a.enterLocked())
	}
	return true
}

// enterLocked counts in a goroutine about to start, and returns the base of its contexts. mu
// held.
func (a *aftermath) enterLocked() context.Context {
	if a.running == 0 {
		a.idle = make(chan struct{})
	}
	if a.base == nil {
		a.base, a.abandon = context.WithCancel(context.Background())
	}
	a.running++
	return a.base
}

// exitLocked counts out a goroutine that ends. mu held.
func (a *aftermath) exitLocked() {
	a.running--
	if a.running == 0 {
		close(a.idle)
	}
}

// start runs work at once on a goroutine of its own, beside the queued work, with a context
// that close cancels if its ctx ends first (each request of the work bounds itself); close and
// wait wait for it as for the queued work. It returns false (and the caller runs the work) if
// the aftermath is closed.
func (a *aftermath) start(work func(context.Context)) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	go func(base context.Context) { // owned by the aftermath: close and wait wait for it
		work(base)
		a.mu.Lock()
		defer a.mu.Unlock()
		a.exitLocked()
	}(a.enterLocked())
	return true
}

// send runs publish, which publishes a message that no one answers and reports whether it
// could, unless the aftermath is closed: it reports whether publish ran and succeeded. close
// waits for the publishes running, and confirms the ones made (see close).
func (a *aftermath) send(publish func() bool) bool {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return false
	}
	a.enterLocked()
	a.mu.Unlock()
	ok := publish()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.unanswered = a.unanswered || ok
	a.exitLocked()
	return ok
}

// run does the queued work until there is none, each piece bounded by one call timeout and
// by base.
func (a *aftermath) run(b *Backend, base context.Context) {
	for {
		a.mu.Lock()
		if len(a.todo) == 0 {
			a.workers--
			if a.workers == 0 {
				a.todo = nil // let the backing array go
			}
			a.exitLocked()
			a.mu.Unlock()
			return
		}
		work := a.todo[0]
		a.todo[0] = nil
		a.todo = a.todo[1:]
		a.mu.Unlock()
		ctx, cancel := b.req(base)
		work(ctx)
		cancel()
	}
}

// close makes later work run in its callers, and waits until the queued work is done or ctx
// ends. If ctx ends first, it drops the work not started and cancels the work running, which
// then ends as soon as its requests return: wait waits for it. Else, if send published
// messages, it calls confirm, which waits for them.
func (a *aftermath) close(ctx context.Context, confirm func(context.Context) error) {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	err := a.wait(ctx)
	a.mu.Lock()
	if err != nil {
		a.todo = nil
	}
	unanswered := err == nil && a.unanswered
	a.unanswered = false
	if a.abandon != nil {
		a.abandon() // when the work is done, this only releases base
	}
	a.mu.Unlock()
	if unanswered {
		_ = confirm(ctx) // as the queued work's, its failure leaves records never read again
	}
}

// wait waits until no goroutine of the aftermath runs, or returns context.Cause(ctx) if ctx
// ends first.
func (a *aftermath) wait(ctx context.Context) error {
	a.mu.Lock()
	idle := a.idle
	if a.running == 0 {
		idle = nil
	}
	a.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// afterAck writes the tombstone of the job of d, acked, unless entombed says Ack did, and drops
// its state record (not if the tombstone could not be written on a queue whose ack floor is no
// proof: see ackFloor): in the aftermath, or else (the aftermath full or closed) at once, with
// ctx bounding the requests, and then it returns the error of the record's removal. Where no
// tombstone is kept and the server removes a dropped record by itself, it publishes the
// removal at once with dropSoon, unless the aftermath is closed or the client cannot send it.
func (b *Backend) afterAck(ctx context.Context, d *driver.Delivery, tok *delivered, entombed bool) error {
	// The caller may reuse *d once Ack returns: the work keeps what it needs.
	if b.recordTTL && !b.tombstones {
		tok.stMu.Lock()
		recorded := tok.recorded()
		tok.stMu.Unlock()
		if !recorded || b.after.send(func() bool { return b.dropSoon(d) }) {
			return nil
		}
	}
	d = &driver.Delivery{Message: driver.Message{ID: d.ID}, Seq: d.Seq}
	var err error
	work := func(ctx context.Context) {
		if !entombed && !b.tombstone(ctx, d) && b.floorless() {
			// The record (a run whose lease ends) is then the only proof of the ack left
			// (see staleRun): without it, a resurrected job would block its key for good.
			return
		}
		tok.stMu.Lock()
		defer tok.stMu.Unlock()
		err = b.dropState(ctx, d, tok) // in the aftermath, a record left is never read again
	}
	if b.after.add(b, work) {
		return nil
	}
	work(ctx)
	return err
}
