package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// Receive implements driver.Backend: it leases the first waiting job, in enqueue order, that is
// due and is the first stored job of its ordering key, with SELECT ... FOR UPDATE SKIP LOCKED,
// so that receivers in any number of processes never take one job twice nor wait for each
// other. The same query first takes back the leases that ended (a lease whose handler started
// spends its attempt, and its history records the expiry), whether or not other jobs are
// ready; the jobs taken back wait in their enqueue order for the next query. If there is no
// job, Receive waits for a notification (a job stored or made ready, see listen), for the time
// the next delayed job is due or lease ends, or for the poll interval (WithPollInterval),
// whichever comes first. One query serves every receiver of the backend that asked meanwhile
// (see claim). When ctx ends, Receive returns context.Cause(ctx) once nothing is leased for it:
// a job that a query in flight leased for it is given back first, as if never delivered, which
// waits for that query (at most WithCallTimeout, and as long again for the give-back). The
// exceptions: ctx's deadline passing while the receiver's own query (made when no other was
// under way) runs abandons that query, and a job it leased comes back when its lease ends, its
// attempt unspent; and a caller who gives up waiting (the abandon context of
// driver.WithAbandon ends, as when a consumer's Close runs out of time) gets the cause at once:
// its own query is abandoned as at the deadline, and a job that a shared query leased for it is
// given back without it.
func (b *Backend) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	if err := b.life.Check(calls); err != nil {
		return err
	}
	if lease <= 0 {
		return fmt.Errorf("postgres: lease %v must be positive", lease)
	}
	for {
		if err := b.life.Check(calls); err != nil {
			return err // closed since
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		gen := b.wake.generation()
		r, err := b.claim(ctx, lease, d)
		if err != nil {
			return err
		}
		if r.got {
			if r.more {
				// Another job is ready (one notification can stand for many jobs,
				// and a job taken back is ready for the next query): pass the
				// wake-up on.
				b.wake.one()
			}
			return nil
		}
		if r.rescued {
			// A job taken back is ready now; one an operator cancelled goes to the
			// dead letters (see admin.go). If that fails, the job stays marked, never
			// delivered, and the next take-back or Cancel buries it.
			cctx, cancel := b.call(ctx)
			_ = b.buryCanceled(cctx)
			cancel()
			continue
		}
		if err := b.wait(ctx, gen, r.due); err != nil {
			return err
		}
	}
}

// claimed is what claim found.
type claimed struct {
	got  bool // a job, leased into the delivery
	more bool // with got: another job was ready, or a lease was taken back
	// rescued: the query took back a lease that ended; the job is ready for the next.
	rescued bool
	// due, without got: how long until a delayed job is due or a lease ends; 0 if a lease
	// ended (and was not taken back: a transaction holds its row), negative if nothing is
	// delayed or leased.
	due time.Duration
}

// maxClaim bounds the receivers one claim query serves.
const maxClaim = 64

// claim leases a job into d, and reports whether there was one (see claimed). The receivers
// of a backend take turns: one query at a time looks for jobs. A receiver that finds none
// under way makes its own, with its ctx; the requests that came meanwhile are served by a
// goroutine (the claimer, see claimLoop), one query for all of them, so that many receivers
// make few queries and do not crowd the server.
func (b *Backend) claim(ctx context.Context, lease time.Duration, d *driver.Delivery) (claimed, error) {
	b.claimMu.Lock()
	if b.claimStop {
		b.claimMu.Unlock()
		return claimed{}, driver.ErrClosed
	}
	if !b.claiming {
		// No claim under way (so none waits): make this receiver's now, with its ctx, then
		// hand the requests that came meanwhile to a claimer.
		b.claiming = true
		b.claimExit = make(chan struct{})
		b.claimMu.Unlock()
		sctx, stop := calls.UntilDeadline(ctx)
		defer stop()
		cctx, cancel := b.call(sctx)
		defer cancel()
		jobs, r, err := b.claimQuery(cctx, lease, 1)
		b.claimMu.Lock()
		if len(b.claimQ) > 0 {
			go b.claimLoop(b.claimExit) // owned by b: it ends when no receiver waits; Close waits for it
		} else {
			b.claiming = false
			close(b.claimExit)
		}
		b.claimMu.Unlock()
		if err != nil {
			return claimed{}, receiveFail(ctx, cctx, "receive", err)
		}
		if len(jobs) == 0 {
			return claimed{due: r.due, rescued: r.rescued}, nil
		}
		if ctx.Err() != nil { // the receiver left while the query ran: give its job back
			gctx, stop := calls.GiveBack(ctx)
			defer stop()
			b.unclaim(gctx, jobs[:1])
			return claimed{}, context.Cause(ctx)
		}
		*d = jobs[0]
		return claimed{got: true, more: r.more || r.rescued}, nil
	}
	req := &claimReq{lease: lease, d: d, done: make(chan claimResult, 1)}
	b.claimQ = append(b.claimQ, req)
	if b.onQueued != nil {
		b.onQueued()
	}
	b.claimMu.Unlock()
	select {
	case res := <-req.done:
		return res.claimed, res.err
	case <-ctx.Done():
		return b.leaveClaim(ctx, req)
	}
}

// leaveClaim is claim's end for a receiver whose ctx ended while req waited for the claimer.
func (b *Backend) leaveClaim(ctx context.Context, req *claimReq) (claimed, error) {
	b.claimMu.Lock()
	switch req.state {
	case reqDone: // it came as ctx ended: take it
		b.claimMu.Unlock()
		res := <-req.done
		return res.claimed, res.err
	case reqWaiting:
		b.claimQ = slices.DeleteFunc(b.claimQ, func(r *claimReq) bool { return r == req })
		b.claimMu.Unlock()
		return claimed{}, context.Cause(ctx)
	}
	// In flight: the claimer gives back a job it gets for this request, then answers. Wait
	// for that, so that no job is leased for this receiver once it has returned (a consumer
	// that closed leaves every job it did not take ready), unless the receiver gives up
	// waiting (see driver.Call.GiveBack): the claimer still gives the job back.
	req.state = reqAbandoned
	if b.onLeft != nil {
		b.onLeft()
	}
	b.claimMu.Unlock()
	gctx, stop := calls.GiveBack(ctx)
	defer stop()
	select {
	case <-req.done:
	case <-gctx.Done():
	}
	return claimed{}, context.Cause(ctx)
}

// A claimReq is a receiver's request to the claimer. Its state is guarded by claimMu; d is
// written by the claimer before it sets reqDone, and only if the request is not abandoned.
type claimReq struct {
	lease time.Duration
	d     *driver.Delivery
	state int
	done  chan claimResult // the result, once: buffered
}

const (
	reqWaiting   = iota // in claimQ
	reqInFlight         // in the claimer's query
	reqDone             // answered on done
	reqAbandoned        // its receiver's ctx ended in flight: it waits for an empty answer
)

type claimResult struct {
	claimed
	err error
}

// claimLoop is the claimer: it serves the waiting requests, up to maxClaim of one lease at a
// time, with one query each round, until none waits; then it closes exit.
func (b *Backend) claimLoop(exit chan struct{}) {
	var batch []*claimReq
	for {
		b.claimMu.Lock()
		batch = b.takeClaims(batch[:0])
		if len(batch) == 0 {
			b.claiming = false
			close(exit)
			b.claimMu.Unlock()
			return
		}
		b.claimMu.Unlock()
		b.claimRound(batch)
	}
}

// takeClaims moves the waiting requests of the first one's lease, maxClaim at most, from
// claimQ to batch, in flight. claimMu must be held.
func (b *Backend) takeClaims(batch []*claimReq) []*claimReq {
	if len(b.claimQ) == 0 {
		return batch
	}
	lease := b.claimQ[0].lease
	rest := b.claimQ[:0]
	for _, r := range b.claimQ {
		if r.lease == lease && len(batch) < maxClaim {
			r.state = reqInFlight
			batch = append(batch, r)
		} else {
			rest = append(rest, r)
		}
	}
	clear(b.claimQ[len(rest):])
	b.claimQ = rest
	return batch
}

// claimRound makes one claim query for batch, and answers each request: the jobs found go to
// the requests in order, and the others get the due time (or the query's error). A job for a
// request abandoned meanwhile is given back before that request is answered (with nothing:
// its receiver returns its ctx's cause).
func (b *Backend) claimRound(batch []*claimReq) {
	ctx, cancel := b.call(context.Background())
	defer cancel()
	jobs, r, err := b.claimQuery(ctx, batch[0].lease, len(batch))
	if err != nil {
		err = calls.Fail(ctx, "receive", err)
	}
	var (
		lost []driver.Delivery
		left []*claimReq
	)
	b.claimMu.Lock()
	for i, req := range batch {
		res := claimResult{claimed: claimed{due: r.due, rescued: r.rescued}, err: err}
		if i < len(jobs) {
			res.claimed = claimed{got: true, more: (r.more || r.rescued) && i == len(jobs)-1}
		}
		if req.state == reqAbandoned {
			if res.got {
				lost = append(lost, jobs[i])
			}
			left = append(left, req)
			continue
		}
		if res.got {
			*req.d = jobs[i]
		}
		req.state = reqDone
		req.done <- res
	}
	b.claimMu.Unlock()
	b.unclaim(context.Background(), lost) // before the receivers that left are answered: they wait for it
	for _, req := range left {
		req.done <- claimResult{}
	}
}

// claimQuery leases up to n jobs for lease, and returns them, whether another job is ready,
// and (if fewer than n were found) how long until a delayed job is due or a lease ends.
func (b *Backend) claimQuery(ctx context.Context, lease time.Duration, n int) ([]driver.Delivery, claimed, error) {
	var r claimed
	rows, err := b.pool.Query(ctx, b.sql.claim, b.name, micros(lease), n, driver.ErrLeaseExpired.Error())
	if err != nil {
		return nil, r, err
	}
	defer rows.Close()
	var jobs []driver.Delivery
	for rows.Next() {
		var (
			d                   driver.Delivery
			got                 bool
			seq, leaseNo        int64
			notBefore, startBy  *time.Time
			attempts, delivered int
			secs                *float64
			rescued             int64
			headers             *string
		)
		m := &d.Message
		if err := rows.Scan(&got, &seq, &m.ID, &m.Key, &m.Version, &headers, &m.Body, &m.EnqueuedAt,
			&notBefore, &startBy, &attempts, &leaseNo, &delivered, &m.Snoozes, &r.more, &secs, &rescued); err != nil {
			return nil, r, err
		}
		switch {
		case secs == nil:
			r.due = -1
		case *secs <= 0:
			r.due = 0
		default:
			r.due = max(time.Duration(math.Ceil(*secs*float64(time.Second))), 1)
		}
		r.rescued = rescued > 0
		if !got {
			continue
		}
		m.NotBefore, m.StartBy = derefTime(notBefore), derefTime(startBy)
		var err error
		if m.Headers, err = parseHeaders(headers); err != nil {
			return nil, r, err
		}
		m.Attempt = attempts + 1
		d.Token = seq
		d.Seq = uint64(leaseNo)
		d.Redelivered = delivered > 1
		jobs = append(jobs, d)
	}
	return jobs, r, rows.Err()
}

// unclaim gives back jobs claimed for receivers that left: each waits again, as if never
// delivered, all within one call timeout and ctx. A job whose give-back fails (or comes too
// late) comes back when its lease ends, with its attempt unspent.
func (b *Backend) unclaim(ctx context.Context, jobs []driver.Delivery) {
	if len(jobs) == 0 {
		return
	}
	ctx, cancel := b.call(ctx)
	defer cancel()
	for _, d := range jobs {
		_, _ = b.pool.Exec(ctx, b.sql.unclaim, b.name, d.Token.(int64), int64(d.Seq), b.channel)
	}
}

// receiveFail is fail for a query of Receive made with cctx, derived from the caller's ctx:
// when ctx ended it is context.Cause(ctx) alone (a job leased by a query abandoned at ctx's
// deadline comes back when its lease ends, with its attempt unspent).
func receiveFail(ctx, cctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return calls.Fail(cctx, op, err)
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// minWait is the shortest wait of a receiver that found nothing to take although something
// was due: a job whose row another transaction holds (an AckTx in progress), skipped until it
// lets go. It keeps such a receiver from spinning.
const minWait = 10 * time.Millisecond

// wait waits until a wake-up after generation gen, for due (negative: nothing is due) or the
// poll interval, whichever is shorter, or until ctx ends or the backend closes.
func (b *Backend) wait(ctx context.Context, gen uint64, due time.Duration) error {
	d := b.o.pollInterval
	if due >= 0 {
		d = min(d, max(due, minWait))
	}
	ch, ok := b.wake.wait(gen)
	if !ok {
		return nil // woken since gen: look again
	}
	woken, err := calls.Wait(ctx, ch, b.closing, d)
	if !woken {
		b.wake.leave(ch)
	}
	return err
}

// signal wakes waiting receivers: one per notification (a receiver that takes a job wakes the
// next, see Receive), or all of them (the listener reconnected, the backend closed). A
// receiver reads the generation before it looks for a job, and waits only if no wake-up came
// since: no wake-up is lost between its look and its wait. The zero signal is ready to use.
type signal struct {
	mu      sync.Mutex      // guards the fields below
	gen     uint64          // wake-ups so far
	waiters []chan struct{} // oldest first; each closed by the wake-up that takes it
}

// generation returns the wake-ups so far.
func (s *signal) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// wait registers a waiter and returns its channel, closed by its wake-up, or reports false if
// a wake-up came since generation gen.
func (s *signal) wait(gen uint64) (chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return nil, false
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	return ch, true
}

// leave takes the waiter ch off the list when it stops waiting for another reason; if a
// wake-up took it meanwhile, the wake-up is passed on to the next waiter.
func (s *signal) leave(ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range s.waiters {
		if w == ch {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			return
		}
	}
	s.oneLocked() // ch was woken: its wake-up goes to another
}

// one wakes the oldest waiter.
func (s *signal) one() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oneLocked()
}

func (s *signal) oneLocked() {
	s.gen++
	if len(s.waiters) > 0 {
		close(s.waiters[0])
		s.waiters[0] = nil
		s.waiters = s.waiters[1:]
	}
}

// all wakes every waiter.
func (s *signal) all() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	for _, w := range s.waiters {
		close(w)
	}
	s.waiters = nil
}

// stopClaims makes later claims fail with queue.ErrClosed, and waits until the claimer, if one
// runs, has served the claims made before and returned, or until ctx ends.
func (b *Backend) stopClaims(ctx context.Context) error {
	b.claimMu.Lock()
	b.claimStop = true
	exit := b.claimExit
	running := b.claiming
	b.claimMu.Unlock()
	if !running {
		return nil
	}
	return awaitExit(ctx, exit)
}
