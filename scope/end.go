package scope

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/corral-go/corral/internal/panics"
)

func (s *Scope) bodyEnded(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isEcho(err) {
		s.echoed.Store(true)
		return
	}
	s.bodyErr = err
	if s.cancelLocked(&bodyError{err}) {
		s.failures = append([]error{err}, s.failures...)
	} else {
		s.failures = append(s.failures, err)
	}
}

// join waits for every task, reporting stuck tasks if asked, and closes the scope to new
// tasks as the last one ends; then it stops the workers.
func (s *Scope) join() {
	if s.track {
		s.watch()
	} else {
		s.wait()
	}
	if s.lim != nil {
		s.lim.stop()
	}
}

// wait waits for every task and closes the scope to new tasks as the last one ends.
func (s *Scope) wait() {
	for !s.tasks.tryClose() {
		<-s.tasks.zero
	}
}

// watch is join's wait with WithStuckReport: once the scope is cancelled, if tasks still run
// after the grace period, it reports them, once.
func (s *Scope) watch() {
	cancelled := s.done // nil once seen
	var grace <-chan time.Time
	var timer *time.Timer
	for !s.tasks.tryClose() {
		select {
		case <-s.tasks.zero:
		case <-cancelled:
			cancelled = nil
			timer = time.NewTimer(s.opts.stuckGrace)
			grace = timer.C
		case <-grace:
			grace = nil
			s.reportStuck()
		}
	}
	if timer != nil {
		timer.Stop()
	}
}

// reportStuck calls the stuck report with the tasks still running, if any.
func (s *Scope) reportStuck() {
	s.mu.Lock()
	idx := make([]int, 0, len(s.running))
	for i := range s.running {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	names := make([]string, len(idx))
	for j, i := range idx {
		if names[j] = s.running[i]; names[j] == "" {
			names[j] = "#" + strconv.Itoa(i)
		}
	}
	s.mu.Unlock()
	if len(names) == 0 {
		return
	}
	s.logStuck(names)
	var c panics.Catcher
	defer s.stuckEnded(&c)
	defer c.Recover()
	s.opts.stuckReport(s.ctx, names)
	c.Returned()
}

// stuckEnded keeps a panic of the stuck report for Run to raise once every task has returned.
// If the report called runtime.Goexit, the goroutine that called Run is ending, and no caller
// up its stack may get to finish the join (the body's unwinding may be the one that called
// it): stuckEnded completes the join itself, and Run's unwinding then only raises.
func (s *Scope) stuckEnded(c *panics.Catcher) {
	switch {
	case c.Panic != nil:
		s.stuckPanic = panics.ScopeError("StuckReport", -1, c.Panic)
	case c.Goexit:
		s.wait()
		if s.lim != nil {
			s.lim.stop()
		}
		s.finish()
	}
}

// result builds Run's error. Every task has ended.
func (s *Scope) result() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if cause := context.Cause(s.ctx); cause != nil && cause != s.cause &&
		(s.echoed.Load() || s.skipped.Load() > 0 || len(s.failures) > 0) {
		if cause == error(s.timeout) && len(s.interrupted) > 0 {
			cause = s.timeoutReport()
		}
		errs = append(errs, cause) // cancelled from outside, and it mattered
	}
	if s.won {
		if s.bodyErr != nil {
			errs = append(errs, s.bodyErr)
		}
	} else {
		errs = append(errs, s.failures...)
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	// A copy, so that errs itself does not escape: a Run with no failure, or one, keeps
	// its list on the stack.
	return &joinedError{slices.Clone(errs)}
}

// timeoutReport is the timeout as Run reports it: naming the tasks it interrupted, by start
// index. s.mu must be held.
func (s *Scope) timeoutReport() *TimeoutError {
	in := slices.Clone(s.interrupted)
	slices.SortFunc(in, func(a, b *TaskError) int { return a.Index - b.Index })
	return &TimeoutError{Timeout: s.timeout.Timeout, Interrupted: in}
}

// raised returns the *PanicError that Run raises once every task has returned, carrying every
// other panic and failure of the scope, or nil. It is the first task panic that is re-raised,
// or, if Run is unwinding (it cannot return an error), the first task panic at all; failing
// those, the stuck report's panic.
func (s *Scope) raised(unwinding bool) *PanicError {
	var p *PanicError
	switch {
	case unwinding:
		p = s.firstPanic()
	case len(s.panics) > 0:
		p = s.panics[0]
	}
	if p == nil {
		p = s.stuckPanic
	}
	if p == nil {
		return nil
	}
	panics.Carry(p, s.othersThan(p)...)
	if s.stuckPanic != nil && p != s.stuckPanic {
		panics.Carry(p, s.stuckPanic)
	}
	return p
}

// firstPanic returns the first task panic, or nil: the first re-raised one, or with
// WithPanicsAsErrors the first among the failures.
func (s *Scope) firstPanic() *PanicError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.panics) > 0 {
		return s.panics[0]
	}
	for _, f := range s.failures {
		if p, ok := f.(*PanicError); ok {
			return p
		}
	}
	return nil
}

// othersThan returns every panic and failure of the scope except p, for a re-raised panic.
func (s *Scope) othersThan(p *PanicError) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, q := range s.panics {
		if q != p {
			errs = append(errs, q)
		}
	}
	for _, f := range s.failures {
		if f != error(p) {
			errs = append(errs, f)
		}
	}
	return errs
}

// finish releases the scope's contexts once every task has ended.
func (s *Scope) finish() {
	s.cancel(&doneError{"scope: Run returned"})
	if s.release != nil {
		s.release()
	}
}
