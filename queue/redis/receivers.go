package redis

import (
	"context"
	"strconv"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// A token tells a waiting receiver to look (run the receive script): a job became ready, by
// a call of this Backend (local), or may be ready, as a look that took a job saw another
// (more): a receiver that finds a job with a more token passes one on in turn, so that idle
// receivers join in on a backlog that no local call announced (jobs of other processes).
type token bool

const (
	local token = false
	more  token = true
)

// receivers is what a Backend's Receive calls share, guarded by the Backend's mu: the waiting
// ones, and what the looks saw.
type receivers struct {
	idle []chan token // the waiting receivers' channels (buffer 1), oldest first
	// untold counts the tokens that found no receiver waiting since the last look was sent.
	untold int
	// lastLook is when the last look was sent (or claimed by a receiver about to send it).
	lastLook time.Time
	// quietAt is when the last look that saw nothing ready, besides the job it took, was sent;
	// quiet says whether the latest look to answer saw nothing more.
	quietAt time.Time
	quiet   bool
	// nextDue is when the first delayed job falls due, as the latest look to answer saw.
	nextDue time.Time
	// lastReap is when a look last reaped the group's idle consumers.
	lastReap time.Time
}

// reapAfter is how long a consumer of the group may stay idle (as XINFO CONSUMERS counts
// it) before a Receive deletes it, once it holds no pending entry: twice the lease, and at least
// ten poll intervals, never less than a lease and a poll interval, in which the entries of a
// dead consumer are taken back. Deleting a live consumer that holds nothing loses nothing:
// its next Receive creates it again.
func (b *Backend) reapAfter(lease time.Duration) time.Duration {
	return max(2*lease, 10*b.o.pollInterval)
}

// Receive implements driver.Backend: one script promotes the delayed jobs that are due, takes
// a pending entry idle for longer than lease (XAUTOCLAIM: a lease that ended) or else a new
// entry (XREADGROUP), and stamps the job with a new delivery generation. A job taken back so
// whose handler had started (Start, and no settle since) gets that run's history entry:
// Number its attempt, Start when Start was called, End now, Error queue.ErrLeaseExpired's
// text. With nothing ready it waits for a local enqueue or settle, the next delayed job, or
// the poll interval. A server with no consumer group for the queue (it lost the queue's keys)
// makes it record again what Open and CheckLease recorded, and look again.
//
// Consumers of the group idle (as XINFO CONSUMERS counts it) for longer than twice lease, and
// at least ten poll intervals, with no pending entry, are deleted by a look of Receive, which
// reaps at most once per half of that bound in each Backend: a consumer left by a process
// that died or never closed its Backend is gone within one and a half bounds of its last
// command once its jobs were taken back at the end of their lease, while some Backend of
// the queue receives.
//
// The Backend's receivers share what their looks found: a Receive called when the latest look
// saw nothing ready but the job it took, within the poll interval, and no local call has
// readied a job that no waiting receiver was told of, waits without asking; one waiting
// receiver asks per poll interval after the last look; and a look that took a job and saw
// more ready tells another receiver, if it was a poll or was told by such a look (the first
// look of a Receive, a worker back for more, does not: the other jobs have their own).
//
// When ctx is cancelled, Receive returns context.Cause(ctx) once nothing is leased for it: a
// look already sent is waited for (at most WithCallTimeout), and a job it took is given back
// as Release gives it back, its attempt unspent, which waits at most as long again. A look in
// flight at ctx's deadline or at the call timeout is abandoned then: it may still take a job
// when the server answers (see ReceiveStart). When the caller gives up waiting (the abandon
// context of driver.WithAbandon ends, as when a consumer's Close runs out of time), Receive
// returns then, abandoning the look or the give-back in flight: the job comes back when its
// lease ends.
func (b *Backend) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	return b.receive(ctx, lease, d, false)
}

// ReceiveStart implements driver.ReceiveStarter: Receive and Start in one script, a round
// trip less a job. The receive script counts the attempt and records the run's start as
// Start does, and the delivery's Token marks it, so that a Bury of it with no run (an
// Attempt of Number 0) gives the attempt back, as Release does; a consumer that dies before
// it runs the handler spends the attempt, whose run gets its history entry when the job is
// taken back (queue.ErrLeaseExpired). So does a call abandoned at its deadline (see
// WithCallTimeout) whose script the server ran after all: a paused server runs the scripts
// queued on its connections when it continues.
func (b *Backend) ReceiveStart(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	err := b.receive(ctx, lease, d, true)
	if err == nil {
		d.Token = startedOnReceive{}
	}
	return err
}

// receive is Receive, and with start ReceiveStart.
func (b *Backend) receive(ctx context.Context, lease time.Duration, d *driver.Delivery, start bool) error {
	w := b.idleJoin()
	defer b.idleLeave(w)
	look, pass := !b.mayWait(), false
	for {
		if err := b.life.Check(calls); err != nil {
			return err
		}
		if look {
			select { // a token now is for a job this look will find
			case t := <-w:
				pass = pass || t == more
			default:
			}
			found, err := b.look(ctx, lease, d, pass, start)
			if found || err != nil {
				return err
			}
		}
		var err error
		if look, pass, err = b.idleWait(ctx, w); err != nil {
			return err
		}
	}
}

// look runs the receive script once, filling d if it took a job, and records what it saw;
// pass says whether to tell another receiver if it saw more jobs ready; start whether to
// start the delivery too (ReceiveStart).
func (b *Backend) look(ctx context.Context, lease time.Duration, d *driver.Delivery, pass, start bool) (bool, error) {
	if ctx.Err() != nil { // a look now would take a job only to give it back
		return false, context.Cause(ctx)
	}
	reapAfter := b.reapAfter(lease)
	b.mu.Lock()
	asked := time.Now()
	b.rcv.lastLook, b.rcv.untold = asked, 0 // this look sees every job readied so far
	reap := int64(0)
	if asked.Sub(b.rcv.lastReap) >= reapAfter/2 {
		reap, b.rcv.lastReap = reapAfter.Milliseconds(), asked
	}
	b.mu.Unlock()
	st := "0"
	if start {
		st = "1"
	}
	// A receive that failed for want of the group promoted due jobs at most, which the next
	// run does not do again.
	sctx, stop := calls.UntilDeadline(ctx)
	defer stop()
	v, err := b.runHealed(ctx, sctx, "receive", receiveScript, b.consumer, max(lease.Milliseconds(), 1), jsonNow(),
		leaseExpiredJSON, reap, nanos(time.Now()), b.cfg.DeadLetterLimit, st)
	if err != nil {
		if ctx.Err() != nil {
			return false, context.Cause(ctx)
		}
		return false, err
	}
	r := strs(v)
	due, saw := r[len(r)-2], r[len(r)-1] == "1"
	var dueAt time.Time
	if ms, err := strconv.ParseInt(due, 10, 64); err == nil {
		dueAt = asked.Add(time.Duration(max(ms, 0)) * time.Millisecond)
	}
	b.mu.Lock()
	b.rcv.nextDue, b.rcv.quiet = dueAt, !saw
	if !saw && asked.After(b.rcv.quietAt) {
		b.rcv.quietAt = asked
	}
	if saw && (pass || r[0] == "") {
		b.tellLocked(more)
	}
	b.mu.Unlock()
	if r[0] == "" {
		return false, nil
	}
	if err := fill(d, r); err != nil {
		return true, err
	}
	if ctx.Err() != nil {
		// Released as the queue releases a delivery it did not run: its attempt, if the
		// script counted it (start), is given back.
		gctx, stop := calls.GiveBack(ctx)
		defer stop()
		_ = b.Release(gctx, d, 0)
		*d = driver.Delivery{}
		return true, context.Cause(ctx)
	}
	return true, nil
}

// mayWait reports whether a Receive may wait without asking (see Receive).
func (b *Backend) mayWait() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rcv.untold == 0 && b.rcv.quiet && time.Since(b.rcv.quietAt) < b.o.pollInterval
}

// idleWait waits until a waiting receiver is to look: at a token on w, or at its time to look,
// the poll interval after the last look of any receiver of this backend, or the next delayed
// job's due time if no look was sent since. A receiver whose time comes claims the look (it
// becomes the last look), so that the others wait on. It reports whether to look, and whether
// the look is to pass a token on if it sees more jobs (a poll, or a more token).
func (b *Backend) idleWait(ctx context.Context, w chan token) (look, pass bool, err error) {
	for {
		b.mu.Lock()
		at := b.rcv.lastLook.Add(b.o.pollInterval)
		if due := b.rcv.nextDue; !due.IsZero() && due.Before(at) && b.rcv.lastLook.Before(due) {
			at = due
		}
		d := time.Until(at)
		if d <= 0 {
			b.rcv.lastLook = time.Now()
		}
		b.mu.Unlock()
		if d <= 0 {
			return true, true, nil
		}
		t := time.NewTimer(d)
		select {
		case tk := <-w:
			t.Stop()
			return true, tk == more, nil
		case <-t.C:
		case <-b.closing:
			t.Stop()
			return false, false, driver.ErrClosed
		case <-ctx.Done():
			t.Stop()
			return false, false, context.Cause(ctx)
		}
	}
}

// signal wakes this backend's blocked Enqueue calls, and one waiting Receive: a job may
// have become ready, and room may have freed. Waking one receiver, not all, keeps 64 idle
// workers from running 64 scripts for one new job.
func (b *Backend) signal() {
	b.mu.Lock()
	close(b.wake)
	b.wake = make(chan struct{})
	b.tellLocked(local)
	b.mu.Unlock()
}

// roomFreed wakes this backend's blocked Enqueue calls, not its receivers.
func (b *Backend) roomFreed() {
	b.mu.Lock()
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// tellLocked hands t to the oldest waiting receiver that has no token, or counts it untold.
func (b *Backend) tellLocked(t token) {
	for _, ch := range b.rcv.idle {
		select {
		case ch <- t:
			return
		default:
		}
	}
	b.rcv.untold++
}

// idleJoin registers a receiver, before it looks for a job, so that no signal sent while it
// looks is missed: the token waits in its channel.
func (b *Backend) idleJoin() chan token {
	ch := make(chan token, 1)
	b.mu.Lock()
	b.rcv.idle = append(b.rcv.idle, ch)
	b.mu.Unlock()
	return ch
}

// idleLeave unregisters a receiver; a token it holds unused goes on to another receiver, so
// that a wake-up meant for a new job is never lost with a receiver that took another one.
func (b *Backend) idleLeave(ch chan token) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, c := range b.rcv.idle {
		if c == ch {
			b.rcv.idle = append(b.rcv.idle[:i], b.rcv.idle[i+1:]...)
			break
		}
	}
	select {
	case t := <-ch:
		b.tellLocked(t)
	default:
	}
}
