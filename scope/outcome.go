package scope

import (
	"context"

	"github.com/corral-go/corral/internal/echo"
	"github.com/corral-go/corral/internal/panics"
)

// ended records the outcome of t, and in an unbounded scope publishes it.
func (s *Scope) ended(t *task, c *panics.Catcher, errp *error) {
	var (
		pe           *PanicError
		echo         bool
		failure, err error
	)
	// A task that returned nil, the common case, is classified here: a call less a task.
	if *errp != nil || c.Panic != nil || c.Goexit {
		pe, echo, failure, err = s.outcome(t, c, *errp)
	}
	switch {
	case echo:
		s.echoedBy(t, err)
	case failure != nil || !s.successNoop || s.track:
		if failure != nil {
			s.logFailure(failure)
		}
		s.mu.Lock()
		if s.track {
			delete(s.running, t.index)
		}
		if pe != nil && !s.opts.returnPanics {
			s.panics = append(s.panics, pe)
			s.cancelLocked(pe)
		} else {
			s.decideLocked(t, failure)
		}
		s.mu.Unlock()
	}
	t.err = err
	if s.lim == nil {
		s.publish(t)
	}
}

// echoedBy records that t ended by returning err, its scope's cancellation: not a failure, but
// an interruption that Run names if the scope's WithTimeout caused it.
func (s *Scope) echoedBy(t *task, err error) {
	if !s.echoed.Load() {
		// Cheap: many tasks echo a cancellation at once.
		s.echoed.Store(true)
	}
	interrupted := s.timedOut()
	if !interrupted && !s.track {
		return
	}
	s.mu.Lock()
	if s.track {
		delete(s.running, t.index)
	}
	if interrupted {
		s.interrupted = append(s.interrupted, &TaskError{Name: t.name, Index: t.index, Err: err})
	}
	s.mu.Unlock()
}

// timedOut reports whether the scope was cancelled by its WithTimeout expiring (not by
// itself, nor by its parent first).
func (s *Scope) timedOut() bool {
	return s.timeout != nil && context.Cause(s.ctx) == error(s.timeout)
}

// outcome classifies how t ended, given what its Catcher saw and the error it returned: pe is
// its panic, if it panicked; echo says that it merely returned its scope's cancellation;
// failure, if not nil, is the failure the scope records (pe if t panicked); res is what its
// Handle gets.
func (s *Scope) outcome(t *task, c *panics.Catcher, err error) (pe *PanicError, echo bool, failure, res error) {
	switch {
	case c.Panic != nil:
		pe = panics.ScopeError(t.name, t.index, c.Panic)
		return pe, false, pe, pe
	case c.Goexit:
		failure = &TaskError{Name: t.name, Index: t.index, Err: ErrGoexit}
		return nil, false, failure, failure
	case err != nil:
		if s.isEcho(err) {
			return nil, true, nil, err
		}
		return nil, false, &TaskError{Name: t.name, Index: t.index, Err: err}, err
	}
	return nil, false, nil, nil
}

// publish makes the end of t visible: its Handle resolves, and the join stops counting it.
func (s *Scope) publish(t *task) {
	if t.settle != nil {
		t.settle(t.err)
	}
	s.tasks.done()
	if s.opts.published != nil {
		s.opts.published()
	}
}

// decideLocked applies the Joiner to a task's outcome. s.mu must be held.
func (s *Scope) decideLocked(t *task, failure error) {
	cancel, report, p := s.decide(failure)
	if p != nil {
		// Raised by Run once every task has returned, like a task's panic; the scope cancels
		// as it would for one, and the failure the Joiner could not decide on is reported.
		s.panics = append(s.panics, p)
		s.cancelLocked(p)
		if failure != nil {
			s.failures = append(s.failures, failure)
		}
		return
	}
	if failure == nil {
		// The first success the Joiner completes on wins, unless the scope cancelled itself
		// first (a failure, the body, a panic): a cancellation from outside (the parent ctx,
		// WithTimeout) leaves s.cause nil, and a task that succeeds anyway still completes it.
		if cancel && !s.won && s.cause == nil {
			s.won, s.winner = true, t.index
			s.cancelLocked(&doneError{"scope: completed by task " + panics.TaskLabel(t.name, t.index)})
		}
		return
	}
	if cancel && s.cancelLocked(failure) {
		s.failures = append([]error{failure}, s.failures...)
		return
	}
	if report {
		s.failures = append(s.failures, failure)
	}
}

// decide asks the Joiner, recovering its panic as a *PanicError (Name "Joiner", Index -1).
func (s *Scope) decide(failure error) (cancel, report bool, p *PanicError) {
	var c panics.Catcher
	defer func() {
		if c.Panic != nil {
			p = panics.ScopeError("Joiner", -1, c.Panic)
		}
	}()
	defer c.Recover()
	cancel, report = s.joiner.Decide(failure)
	c.Returned()
	return cancel, report, nil
}

// cancelLocked cancels the scope with cause unless it is already cancelled, and reports whether
// it did. s.mu must be held.
func (s *Scope) cancelLocked(cause error) bool {
	if s.cause != nil || s.ctx.Err() != nil {
		return false
	}
	s.cause = cause
	s.cancel(cause)
	return true
}

// isEcho reports whether err only echoes the scope's own cancellation: the scope is cancelled
// and err is a context error or matches the cause. Thousands of tasks may ask at once as a
// scope is cancelled, so the common case takes no lock: a non-blocking receive from a closed
// channel does not lock it, while ctx.Err and context.Cause do.
func (s *Scope) isEcho(err error) bool {
	return s.cancelled() && echo.Of(s.ctx, err)
}
