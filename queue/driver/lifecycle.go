package driver

import (
	"errors"
	"sync"
)

// Lifecycle is a broker backend's state from its Open to its Close, kept
// by one mechanism so that every backend gives a call made too early or
// too late the same error. The zero Lifecycle is a backend not opened. A
// Lifecycle must not be copied after first use; its methods are safe for
// concurrent use.
type Lifecycle struct {
	openMu  sync.Mutex // held by Open while its open func runs
	mu      sync.Mutex // guards the fields below
	opened  bool
	closed  bool
	closing chan struct{} // made by the first Closing or Close, closed by Close
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
	l.mu.Lock()
	opened, closed := l.opened, l.closed
	l.mu.Unlock()
	switch {
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
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opened {
		return errors.New(c.Name + ": backend not opened")
	}
	if l.closed {
		return ErrClosed
	}
	return nil
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
