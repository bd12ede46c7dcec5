package memory

import (
	"context"
	"time"

	"github.com/corral-go/corral/internal/wake"
)

type waiter struct {
	c     chan struct{} // capacity 1: a wake-up
	timer *time.Timer
}

// waitList is a FIFO of waiters (receivers, or blocked producers), woken one
// at a time and oldest first (see internal/wake): while a woken waiter has not
// yet taken m.mu again, a new signal is dropped, because that waiter will look
// at the state anyway. A woken waiter that leaves more work than it takes
// passes the wake-up on. So a stream of jobs wakes a sleeping receiver only
// when none is already on its way, not once per job.
type waitList = wake.List[*waiter]

// broadcast wakes every waiter of l (see Close). m.mu held.
func (m *Backend) broadcast(l *waitList) {
	for _, w := range l.WakeAll() {
		select {
		case w.c <- struct{}{}:
		default:
		}
	}
}

// signal wakes the oldest waiter of l, unless one is already on its way.
// m.mu held.
//
// Most signals wake no one (every job signals roomWait as it leaves, and
// recvWait as it becomes ready): signal is small enough to be inlined, and
// so is Wakeable in it, where WakeOldest, a generic method, is a call.
func (m *Backend) signal(l *waitList) {
	if l.Wakeable() {
		m.wakeOldest(l)
	}
}

// wakeOldest is signal once l is Wakeable. m.mu held.
//
// It is not inlined: inlined in signal, it would make signal too large to
// be inlined in turn.
//
//go:noinline
func (m *Backend) wakeOldest(l *waitList) {
	if w, ok := l.WakeOldest(); ok {
		select {
		case w.c <- struct{}{}:
		default:
		}
	}
}

// wait releases m.mu until signalled, for at most d (if not zero), or until
// ctx ends, and reacquires it. It returns the ctx cause if ctx ended.
//
// kick, if not nil, also ends the wait (see Backend.kick).
func (m *Backend) wait(ctx context.Context, l *waitList, d time.Duration, kick <-chan struct{}) error {
	var w *waiter
	if n := len(m.idle); n > 0 {
		w = m.idle[n-1]
		m.idle = m.idle[:n-1]
	} else {
		w = &waiter{c: make(chan struct{}, 1)}
	}
	l.Park(w)
	var tc <-chan time.Time
	if d > 0 {
		if w.timer == nil {
			w.timer = time.NewTimer(d)
		} else {
			w.timer.Reset(d)
		}
		tc = w.timer.C
	}
	m.mu.Unlock()
	var err error
	select {
	case <-w.c:
	case <-tc:
	case <-kick:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	m.mu.Lock()
	// Leave the wait list if still on it. A waiter no longer on the list
	// was signalled; if it is leaving because of ctx, it passes the
	// wake-up on so that no one else misses it.
	woken := !l.Remove(w)
	select {
	case <-w.c:
	default:
	}
	if woken {
		l.Arrived()
		if err != nil {
			m.signal(l)
		}
	}
	m.idle = append(m.idle, w)
	return err
}
