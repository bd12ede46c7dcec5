package driver

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Lifecycle is a broker backend's state from its Open to its Close, kept
// by one mechanism so that every backend gives a call made too early or
// too late the same error. A backend's New calls Init; the zero Lifecycle
// is the one of a zero Backend, whose Open, Check and Begin panic (see
// Init). A Lifecycle must not be copied after first use; its methods are
// safe for concurrent use.
type Lifecycle struct {
	openMu  sync.Mutex // held by Open while its open func runs
	mu      sync.Mutex // guards the fields below
	made    bool       // set by Init
	opened  bool
	closed  bool
	closing chan struct{} // made by the first Closing or Close, closed by Close
}

// Init marks l as the Lifecycle of a Backend made by its New, which calls
// it once, before any other method of l. On a Lifecycle not marked, the
// one of a zero Backend, Open, Check and Begin panic with "Name: zero
// Backend: use Name.New" (c's Name: see [Call.Made]); Close and Closing
// do not.
func (l *Lifecycle) Init() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.made = true
}

// Open is the body of a backend's Open: it runs open, the backend's own
// setting up (its requests to the broker, the fields its calls read), and
// then marks the backend opened. Without running open, it returns an
// error "Name: backend already opened" (c's Name: a mistake of the
// program) if an Open succeeded before, and ErrClosed if Close was
// called. One open runs at a time: an Open waits for the one running, and
// then fails if that one succeeded. If open returns an error, Open returns
// it; if Close is called while open runs, Open returns ErrClosed; either
// way the backend stays not opened. What open does synchronizes before
// every Check that returns nil. Check, Close and Closing do not wait for a
// running open, and open may call them; it must not call Open, which
// would wait for it.
func (l *Lifecycle) Open(c Call, open func() error) error {
	l.openMu.Lock()
	defer l.openMu.Unlock()
	switch opened, closed := l.state(c); {
	case opened:
		return errors.New(c.Name + ": backend already opened")
	case closed:
		return ErrClosed
	}
	if err := open(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.opened = true
	return nil
}

// Check is the check at the start of a backend's other calls: it returns
// an error "Name: backend not opened" (c's Name: a mistake of the program)
// if no Open has succeeded, else ErrClosed once Close was called, else
// nil.
func (l *Lifecycle) Check(c Call) error {
	switch opened, closed := l.state(c); {
	case !opened:
		return errors.New(c.Name + ": backend not opened")
	case closed:
		return ErrClosed
	}
	return nil
}

// state panics if l is not marked by Init, and else reports whether an
// Open succeeded and whether Close was called.
func (l *Lifecycle) state(c Call) (opened, closed bool) {
	l.mu.Lock()
	made, opened, closed := l.made, l.opened, l.closed
	l.mu.Unlock()
	c.Made(made)
	return opened, closed
}

// Begin is the start of a backend's call that asks its broker: it
// returns Check's error if it is not nil (with ctx itself, and a cancel
// func that does nothing), and else the call's context, made by
// c.Context(ctx, d). The cancel func is never nil: defer it before
// looking at the error, or after.
func (l *Lifecycle) Begin(ctx context.Context, c Call, d time.Duration) (context.Context, context.CancelFunc, error) {
	if err := l.Check(c); err != nil {
		return ctx, func() {}, err
	}
	cctx, cancel := c.Context(ctx, d)
	return cctx, cancel, nil
}

// Close marks the backend closed, and closes the channel that Closing
// returns. It reports whether this call closed it (later calls change
// nothing) and whether an Open had succeeded before.
func (l *Lifecycle) Close() (first, opened bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, l.opened
	}
	l.closed = true
	close(l.closingLocked())
	return true, l.opened
}

// Closing returns a channel that Close closes, for the waits of a
// backend's calls (see Call.Wait).
func (l *Lifecycle) Closing() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closingLocked()
}

// closingLocked returns the channel of Closing, made by its first use. l.mu held.
func (l *Lifecycle) closingLocked() chan struct{} {
	if l.closing == nil {
		l.closing = make(chan struct{})
	}
	return l.closing
}
