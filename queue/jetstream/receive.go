package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/driver"
)

// Receive implements driver.Backend. The consumer's AckWait is the lease, one for every process
// of the queue (see CheckLease, which a Receive with a lease the queue does not have yet calls).
// A job whose start time has not come, or whose ordering key has an earlier job stored, is
// handed back to the broker with a delay and not counted as an attempt; so is every job while
// the queue is paused (see admin.go), and a job an operator cancelled is buried.
//
// Jobs are prefetched (WithPrefetch). When a Receive ends because its ctx ended and no other
// Receive is running, prefetching stops and the prefetched jobs are released to the broker (on
// a server older than 2.10.16, to be delivered again after a second, as after a reconnection
// and at Close: see drainPump). A
// Receive cancelled while it takes a prefetched job (the requests that read the job's state)
// waits for those requests (at most a call timeout), releases the job (at most one more) and
// stops prefetching if no other Receive is running, before it returns. When the caller gives
// up waiting (the abandon context of driver.WithAbandon ends, as when a consumer's Close runs
// out of time), it returns then: a take in flight is abandoned, and the background work that
// follows acks gives the job back and stops prefetching (Close waits for it within its ctx).
//
// While it waits, Receive looks at the connection every call timeout: when the client is not
// connected, or the broker missed its heartbeats to the prefetch, it returns an error matching
// queue.ErrUnavailable, so that "no job" is never mistaken for "no broker" (the consumer
// retries after a backoff, and queue.Health reports it); when it is connected, it tidies the
// queue at most once per lease, as Stats does (see resurrect.go).
func (b *Backend) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	if err := b.life.Check(calls); err != nil { // before the arguments, as every method
		return err
	}
	if lease <= 0 {
		return fmt.Errorf("jetstream: lease %v must be positive", lease)
	}
	var tick *time.Timer
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	for {
		if err := b.holdWhilePaused(ctx); err != nil {
			return err
		}
		p, err := b.pumpFor(ctx, lease)
		if err != nil {
			return err
		}
		if tick == nil {
			tick = time.NewTimer(b.o.callTimeout)
		} else {
			tick.Reset(b.o.callTimeout)
		}
		a, ok, err := b.await(ctx, p, tick.C, lease)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if b.nc.Stats().Reconnects != p.reconnects {
			// Prefetched before a reconnection (see resurrect.go): the pump and what it
			// holds go back to the broker, and a new pump takes over.
			retired := b.retirePump(p, retire)
			b.handOff(ctx, func(ctx context.Context) {
				b.release(ctx, a)
				if retired {
					b.abandonPump(ctx, p)
				}
			})
			continue
		}
		ok, err = b.takeFor(ctx, p, a, lease, d)
		if err != nil || ok {
			return err
		}
	}
}

// takeFor is take for a receiver with ctx, of a message from p: take's requests run until
// ctx's deadline but not its cancel, and a job taken for a receiver cancelled meanwhile goes
// back to the broker, unspent, before the receiver gets ctx's cause (see driver.Backend's
// Receive); if it was the last receiver, prefetching stops, as when a receiver leaves in await.
func (b *Backend) takeFor(ctx context.Context, p *pump, a arrival, lease time.Duration, d *driver.Delivery) (bool, error) {
	sctx, stop := calls.UntilDeadline(ctx)
	defer stop()
	if b.onTake != nil {
		b.onTake()
	}
	ok, err := b.take(sctx, a, lease, d)
	if ctx.Err() == nil {
		return ok, err
	}
	*d = driver.Delivery{}
	a.fresh = false // take counted it out of the prefetched
	// A take that failed (abandoned, say) may have left the job half taken: it goes back too.
	b.handBack(ctx, p, a, ok || err != nil, b.retirePump(p, ifIdle))
	return false, context.Cause(ctx)
}

// handBack gives back what a receiver that left (ctx ended) holds, before it returns: the
// message a if it holds one, and, if it was the last receiver, what p prefetched, as p stops.
func (b *Backend) handBack(ctx context.Context, p *pump, a arrival, holds, last bool) {
	if !holds && !last {
		return
	}
	b.handOff(ctx, func(ctx context.Context) {
		if holds {
			b.release(ctx, a)
		}
		if last {
			b.stopPump(ctx, p)
		}
	})
}

// handOff does work, which hands jobs back to the broker (a message released, a pump stopped)
// for a receiver with ctx, before it returns, whether or not ctx was cancelled meanwhile. A
// receiver that may give up waiting (see driver.Call.GiveBack) has the aftermath run the work,
// and returns when it is done or when it gives up: the work goes on, so that the jobs of other
// receivers that it hands back still go back at once (Backend.Close waits for it within its
// ctx).
func (b *Backend) handOff(ctx context.Context, work func(context.Context)) {
	gctx, stop := calls.GiveBack(ctx)
	defer stop()
	if gctx.Done() == nil { // the receiver cannot give up
		work(gctx)
		return
	}
	done := make(chan struct{})
	if !b.after.start(func(ctx context.Context) { defer close(done); work(ctx) }) {
		work(gctx)
		return
	}
	select {
	case <-done:
	case <-gctx.Done():
	}
}

// await waits on p, which counts the caller as a receiver, for a prefetched message, and
// counts the caller out. It returns the message (true), or none (false) when the caller should
// get a pump again: p stopped or died, or a call timeout passed with the connection fine (then
// it may tidy the queue: see tidyIdle). It
// fails with the connection's error (see connectionError), or with the cause of ctx once ctx
// ended, after handing back the message it took and stopping p if no other receiver is left.
func (b *Backend) await(ctx context.Context, p *pump, tick <-chan time.Time, lease time.Duration) (arrival, bool, error) {
	var a arrival
	var ok bool
	if ctx.Err() == nil {
		select {
		case <-tick:
			b.leave(p, stay)
			if err := b.connectionError(p); err != nil {
				return a, false, err
			}
			b.tidyIdle(ctx, lease)
			return a, false, nil
		case a = <-p.buf:
			ok = true
		case <-p.stopped:
			b.leave(p, stay)
			return a, false, nil
		case <-p.dead:
			// The client gave up on this subscription (for example the consumer was
			// deleted): release what it prefetched and start another.
			if b.leave(p, retire) {
				b.handOff(ctx, func(ctx context.Context) { b.stopPump(ctx, p) })
			}
			return a, false, nil
		case <-ctx.Done():
		}
	}
	last := b.leave(p, retireIfCanceled(ctx))
	if ctx.Err() != nil {
		b.handBack(ctx, p, a, ok, last)
		return a, false, context.Cause(ctx)
	}
	return a, true, nil
}

// retirement says what leave (beside counting the receiver out) and retirePump do with the
// pump.
type retirement int

const (
	stay   retirement = iota // the pump keeps running
	retire                   // the pump is taken out of service
	ifIdle                   // the pump is taken out of service if no receiver is left
)

// retireIfCanceled is ifIdle once ctx ended (the last Receive to leave stops prefetching),
// else stay.
func retireIfCanceled(ctx context.Context) retirement {
	if ctx.Err() != nil {
		return ifIdle
	}
	return stay
}

// leave counts a receiver out of p and, as r says, takes p out of service if it still is
// the running pump. It reports whether it did: the caller then stops p.
func (b *Backend) leave(p *pump, r retirement) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.receivers--
	return b.retireLocked(p, r)
}

// retirePump takes p out of service as r says, if it still is the running pump, and reports
// whether it did: the caller then stops p.
func (b *Backend) retirePump(p *pump, r retirement) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.retireLocked(p, r)
}

// retireLocked is retirePump with b.mu held.
func (b *Backend) retireLocked(p *pump, r retirement) bool {
	if b.pump != p || r == stay || r == ifIdle && b.receivers > 0 {
		return false
	}
	b.pump = nil
	return true
}

// connectionError returns an error matching queue.ErrUnavailable if the client is not
// connected, or if p's subscription reported missed heartbeats within the last call timeout.
func (b *Backend) connectionError(p *pump) error {
	if !b.nc.IsConnected() {
		b.restless()
		return fmt.Errorf("jetstream: receive: %w: %s", driver.ErrUnavailable, b.nc.Status())
	}
	p.errMu.Lock()
	err, at := p.err, p.errAt
	p.errMu.Unlock()
	if err != nil && time.Since(at) < b.o.callTimeout {
		return b.fail(context.Background(), "receive", err)
	}
	return nil
}

// take decides what to do with a prefetched message: hand it to the caller in d (true), or
// deal with it as holdBack says (false). Its requests are bounded by the call timeout.
func (b *Backend) take(ctx context.Context, a arrival, lease time.Duration, d *driver.Delivery) (bool, error) {
	if a.fresh {
		// Counted as prefetched until it is marked or handed out.
		defer b.bufFresh.Add(-1)
	}
	ctx, cancel := b.req(ctx)
	defer cancel()
	got, err := b.delivery(ctx, a.msg)
	if err != nil {
		return false, err
	}
	tok := got.Token.(*delivered)
	tok.arrived = a.at
	if held, err := b.holdBack(ctx, a, got, lease); held || err != nil {
		return false, err
	}
	if tok.marked {
		if err := b.unmark(ctx, got.ID); err != nil {
			return false, err
		}
	}
	leaseStart := a.at // the broker's lease started before the message arrived
	if age := time.Since(a.at); age > lease/4 {
		// The job waited in the prefetch buffer: restart the broker's lease.
		leaseStart = time.Now()
		if err := b.ack(ctx, a.msg, "+WPI"); err != nil {
			return false, err
		}
	}
	tok.leaseEnd = localLeaseEnd(leaseStart, lease)
	*d = *got
	return true, nil
}

// holdBack deals with the message a, decoded in got, that take must not hand out: it buries a
// job an operator cancelled, removes one a crashed server brought back, and hands back to the
// broker one whose start time has not come, every job while the queue is paused, and one whose
// ordering key is busy. It reports whether it did; ctx bounds its requests.
func (b *Backend) holdBack(ctx context.Context, a arrival, got *driver.Delivery, lease time.Duration) (bool, error) {
	tok := got.Token.(*delivered)
	if tok.st.Canceled {
		// Cancelled by an operator in flight, and its process died (see admin.go).
		_, err := b.bury(ctx, got, driver.ReasonCanceled, driver.Attempt{})
		if errors.Is(err, driver.ErrLeaseLost) {
			err = nil // not buried: delivered again when its lease ends (see misnumbered)
		}
		return true, err
	}
	if b.suspect(lease) {
		settled, err := b.settled(ctx, got.Seq, got.ID, false) // being delivered: tracked
		if err != nil {
			return true, err
		}
		if settled {
			// Brought back by a crashed server: remove it, unhandled, and look for more.
			b.resurrected.Add(1)
			b.suspectUntil.Store(time.Now().Add(2 * lease).UnixNano())
			return true, b.ack(ctx, a.msg, "+TERM")
		}
	}
	now := time.Now()
	if got.NotBefore.After(now) {
		return true, b.skip(ctx, got, got.NotBefore.Sub(now), markDelayed)
	}
	if paused, err := b.pausedNow(ctx); err != nil || paused {
		if err != nil {
			return true, err
		}
		b.pauseSeen.Store(true) // see holdWhilePaused
		return true, b.skip(ctx, got, pausePoll, markReady)
	}
	if got.Key != "" {
		free, err := b.keyFree(ctx, got)
		if err != nil {
			return true, err
		}
		if !free {
			return true, b.skip(ctx, got, keyBusyDelays.Delay(int(tok.n), 0), markReady)
		}
	}
	return false, nil
}

// keyBusyDelays is how long take hands back a job whose ordering key has an earlier job stored,
// by the count of the job's deliveries: 5ms for the first, doubling up to 100ms, so that a
// key's next job waits little for a quick handler and polls little behind a slow one.
var keyBusyDelays = backoff.Exponential(5*time.Millisecond, 2, 100*time.Millisecond)

// arrival is a prefetched message.
type arrival struct {
	msg   natsjs.Msg
	at    time.Time
	fresh bool // first delivery: no marker of a handed-back job counts it
}

// pump prefetches messages into buf with the client's Consume.
type pump struct {
	errMu sync.Mutex // guards err and errAt
	err   error      // the last error the client reported on the subscription
	errAt time.Time

	reconnects uint64 // the connection's reconnections when the pump started

	cc       natsjs.ConsumeContext
	dead     <-chan struct{} // cc.Closed(): closed when the client stops the subscription
	stopOnce sync.Once
	buf      chan arrival  // capacity: the prefetch
	stopping chan struct{} // closed by stopPump
	stopped  chan struct{} // closed when the pump has released everything
}

// pumpFor returns the running pump, starting it (and setting the consumer's AckWait to lease)
// if needed, and counts the caller as a receiver.
func (b *Backend) pumpFor(ctx context.Context, lease time.Duration) (*pump, error) {
	calls.Made(b.js != nil)
	if p, err := b.runningPump(lease); p != nil || err != nil {
		return p, err
	}
	b.pumpMu.Lock()
	p, old, err := b.startPump(ctx, lease)
	b.pumpMu.Unlock()
	if old != nil {
		b.handOff(ctx, func(ctx context.Context) { b.stopPump(ctx, old) })
	}
	return p, err
}

// runningPump returns the pump running with lease, and counts the caller as its receiver, or
// nil if none runs with it.
func (b *Backend) runningPump(lease time.Duration) (*pump, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.life.Check(calls); err != nil {
		return nil, err
	}
	if b.lease != lease || b.pump == nil {
		return nil, nil
	}
	b.receivers++
	return b.pump, nil
}

// startPump is pumpFor when no pump runs with lease: it sets the consumer's AckWait to lease if
// the queue has another (and returns the pump of the former lease, for the caller to stop), and
// starts a pump unless another caller did meanwhile. b.pumpMu held: the requests are made
// without b.mu, and one caller at a time makes them, so that one pump runs.
func (b *Backend) startPump(ctx context.Context, lease time.Duration) (p, old *pump, err error) {
	b.mu.Lock()
	current := b.lease // only startPump changes it after Open
	b.mu.Unlock()
	if current != lease {
		if err := b.CheckLease(ctx, lease); err != nil {
			return nil, nil, err
		}
		rctx, cancel := b.req(ctx)
		c, err := b.ensureConsumer(rctx, b.work, lease)
		cancel()
		if err != nil {
			return nil, nil, err
		}
		b.mu.Lock()
		if err := b.life.Check(calls); err != nil {
			b.mu.Unlock()
			return nil, nil, err
		}
		b.cons, b.lease = c, lease
		old, b.pump = b.pump, nil
		b.mu.Unlock()
	}
	b.mu.Lock()
	if err := b.life.Check(calls); err != nil {
		b.mu.Unlock()
		return nil, old, err
	}
	if b.pump != nil { // started by a caller that held pumpMu before this one
		b.receivers++
		p = b.pump
		b.mu.Unlock()
		return p, old, nil
	}
	cons := b.cons
	b.mu.Unlock()
	if p, err = b.consume(cons); err != nil {
		return nil, old, err
	}
	b.mu.Lock()
	if err := b.life.Check(calls); err != nil { // Close found no pump to stop: this one is the caller's
		b.mu.Unlock()
		b.stopPump(context.Background(), p)
		return nil, old, err
	}
	b.pump = p
	b.receivers++
	b.mu.Unlock()
	return p, old, nil
}

// pullHeartbeat is how often the server of a pump's pull request sends a heartbeat while it
// has no message for it.
const pullHeartbeat = 500 * time.Millisecond

// consume starts a pump on cons.
func (b *Backend) consume(cons natsjs.Consumer) (*pump, error) {
	p := &pump{
		reconnects: b.nc.Stats().Reconnects,
		buf:        make(chan arrival, b.o.prefetch),
		stopping:   make(chan struct{}),
		stopped:    make(chan struct{}),
	}
	// Pull requests are sometimes dropped by the server without a word (seen with
	// nats-server 2.9 and 2.14 under concurrent publishing); the client notices only by
	// missing heartbeats, so heartbeats are frequent: a stall lasts at most about 1s.
	cc, err := cons.Consume(func(m natsjs.Msg) { b.arrive(p, m) },
		natsjs.PullMaxMessages(b.o.prefetch), natsjs.PullExpiry(5*time.Second),
		natsjs.PullHeartbeat(pullHeartbeat),
		natsjs.ConsumeErrHandler(func(_ natsjs.ConsumeContext, err error) {
			b.restless() // missed heartbeats, a leadership change
			p.errMu.Lock()
			p.err, p.errAt = err, time.Now()
			p.errMu.Unlock()
		}))
	if err != nil {
		return nil, fmt.Errorf("jetstream: consume: %w", err)
	}
	p.cc, p.dead = cc, cc.Closed()
	return p, nil
}

// arrive runs on the client's delivery goroutine for each prefetched message. It blocks while
// the buffer is full, which stops the client from pulling more. A message that comes once p
// is stopping goes back to the broker, not into the buffer, which drainPump may have emptied
// for the last time (its wait for the client can end first).
func (b *Backend) arrive(p *pump, m natsjs.Msg) {
	a := arrival{msg: m, at: time.Now()}
	if md, err := m.Metadata(); err == nil && md.NumDelivered == 1 {
		a.fresh = true
		b.bufFresh.Add(1)
	}
	select {
	case <-p.stopping:
		b.release(context.Background(), a)
		return
	default:
	}
	select {
	case p.buf <- a:
	case <-p.stopping:
		b.release(context.Background(), a)
	}
}

// stopPump stops p and releases the messages it prefetched, within ten seconds or until ctx
// ends (a message it could not release comes back when its lease ends).
func (b *Backend) stopPump(ctx context.Context, p *pump) {
	p.stopOnce.Do(func() { b.drainPump(ctx, p, p.cc.Drain, 10*time.Second) })
}

// abandonPump stops p, whose subscription predates a reconnection, at once: the client drops
// the messages it pulled and has not passed on (the broker delivers them again after their
// lease, if it still tracks them), and the prefetched ones are released, within a call
// timeout or until ctx ends. Draining would wait for the subscription's pull request to
// expire.
func (b *Backend) abandonPump(ctx context.Context, p *pump) {
	p.stopOnce.Do(func() { b.drainPump(ctx, p, p.cc.Stop, b.o.callTimeout) })
}

// drainPump is the work of stopPump and abandonPump, done once per pump: it stops the
// subscription with stop, waits up to wait for the client to stop it, and releases what p
// holds. On a server older than 2.10.16 the releases (see release) are NAKs with a delay of
// two heartbeats of the pull (lateNak): such a server takes a NAKed job off its redelivery
// queue for a waiting pull request, and, if the only one left is the stopped subscription's
// (open on the server until it expires, or until the server finds its inbox unsubscribed, at
// its next heartbeat), drops the request and forgets to put the job back, which then comes
// back only when its lease ends (nats-server PR #5338, in 2.10.16); before 2.10.14 it also
// rewinds the stream's cursor, and delivers again, as a first delivery, the job it delivered
// last (PR #5305). After two heartbeats the server has dropped the stopped request (on a
// server with leaf nodes or gateways, a request keeps a while longer: 2 s on 2.9.10), and the
// job goes to a live one, or waits for the next pull.
func (b *Backend) drainPump(ctx context.Context, p *pump, stop func(), wait time.Duration) {
	close(p.stopping)
	stop()
	t := time.NewTimer(wait)
	select {
	case <-p.cc.Closed():
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	for {
		select {
		case a := <-p.buf:
			b.release(ctx, a)
			continue
		default:
		}
		break
	}
	close(p.stopped)
}

// release hands a prefetched message back to the broker, not counted as an attempt, with a
// request bounded by ctx and the call timeout. Every caller is a receiver that leaves or a pump
// that stops (another may be stopping it meanwhile): the message is delivered again after
// lateNak (see drainPump).
func (b *Backend) release(ctx context.Context, a arrival) {
	if a.fresh {
		defer b.bufFresh.Add(-1)
	}
	ctx, cancel := b.req(ctx)
	defer cancel()
	d, err := b.delivery(ctx, a.msg)
	if err == nil {
		err = b.skip(ctx, d, b.lateNak, markReady)
	}
	_ = err // the broker redelivers the message after its lease anyway
}
