package scope

import (
	"context"
	"errors"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/panics"
)

// A Scope owns the tasks started in it. It exists only while Run runs: Run hands it to its body
// and returns once every task started in it has returned.
//
// A Scope is safe for concurrent use: the body, its tasks and other goroutines may start tasks
// at the same time, as long as each call happens before Run has returned. Calling Go, GoNamed,
// TryGo or Spawn after Run has returned panics.
type Scope struct {
	ctx         context.Context // the tasks' context, cancelled with a cause
	done        <-chan struct{} // ctx.Done(), made once
	cancel      context.CancelCauseFunc
	release     context.CancelFunc // releases the Timeout context, if any
	opts        options
	policy      Policy // made for this scope by the WithPolicy constructor; used under mu
	successNoop bool   // the policy ignores successes, so a plain success skips the lock
	track       bool   // OnStuck is set: running tasks are tracked by index

	wg      sync.WaitGroup // counts tasks handed to the scope that have not ended
	next    atomic.Int64   // start index of the next task
	skipped atomic.Int64   // tasks not run because the scope was cancelled
	closed  atomic.Bool    // set once Run has joined every task; never reset
	named   atomic.Bool    // set by the first GoNamed; never reset
	echoed  atomic.Bool    // a task or the body returned the scope's own cancellation

	lim *limiter // bounded scopes only (opts.limit > 0): the slots and the workers

	mu       sync.Mutex // guards the fields below
	cause    error      // the cause the scope cancelled itself with, if it did
	won      bool       // the policy completed the scope on a success
	winner   int        // the start index of that task
	bodyErr  error      // the body's non-echo error
	failures []error    // reported failures, root cause first
	panics   []*PanicError
	running  map[int]string // names of the tasks running, by start index (only if track)
}

// task is a unit of work as the scope passes it around: by value, so that handing it to a
// worker allocates nothing.
type task struct {
	fn     func(context.Context) error
	name   string
	index  int
	settle func(err error) // if set, called once with the task's outcome when it ends or is skipped
}

// Run calls body with a new Scope and returns once body and every task started in the scope
// have returned. Tasks get a context derived from ctx that is cancelled, with a cause (see
// context.Cause), when the scope is cancelled: by the policy (by default the first failure),
// by the parent ctx, by the Timeout option, or when body fails.
//
// Run returns nil or an error in which errors.Is and errors.As find every reported failure,
// root cause first: a task failure is a *TaskError (a *PanicError with ReturnPanics); an error
// returned by body is returned as is. A task or body error that is only the echo of the
// scope's own cancellation (it matches ctx.Err() or context.Cause(ctx) after the scope was
// cancelled) is not a failure. If the scope was cancelled from outside (parent or Timeout) and
// that affected the work (an echo, a skipped task, or a failure), the cancellation cause comes
// first.
//
// If a task panicked (and ReturnPanics is not set), Run cancels the scope, waits for every task,
// then panics with a *PanicError carrying the first panic's value and stack, and every other
// panic and failure (so a root cause that was an error, not a panic, is among those carried).
//
// If body panics or calls runtime.Goexit, Run cancels the scope, waits for every task and lets
// the panic or Goexit go on. If a task panicked too, with or without ReturnPanics, Run panics
// instead with that task's *PanicError (the first one), which carries every other panic and
// failure and the body's panic (Name "body", Index -1): no panic is lost.
//
// A nil ctx, body or Option panics.
func Run(ctx context.Context, body func(s *Scope) error, opts ...Option) error {
	if ctx == nil {
		panic("scope: nil context")
	}
	if body == nil {
		panic("scope: nil body")
	}
	s := newScope(ctx, opts)
	returned := false
	defer func() {
		if returned {
			return
		}
		// body panicked or called runtime.Goexit: the scope must still not outlive Run.
		stack := debug.Stack()
		s.mu.Lock()
		s.cancelLocked(&bodyError{})
		s.mu.Unlock()
		s.join()
		s.finish()
		if p := s.firstPanic(); p != nil {
			v := recover() // nil for Goexit
			p.others = append(p.others, s.othersThan(p)...)
			if v != nil {
				p.others = append(p.others, &PanicError{Name: "body", Index: -1, Value: v, Stack: stack})
			}
			panic(p)
		}
	}()
	err := body(s)
	returned = true
	s.bodyEnded(err)
	s.join()
	err = s.result()
	s.finish()
	if len(s.panics) > 0 {
		p := s.panics[0]
		p.others = append(p.others, s.othersThan(p)...)
		panic(p)
	}
	return err
}

func newScope(ctx context.Context, opts []Option) *Scope {
	s := &Scope{}
	for _, o := range opts {
		if o == nil {
			panic("scope: nil option")
		}
		o.apply(&s.opts)
	}
	s.policy = failFast{}
	if s.opts.newPolicy != nil {
		if s.policy = s.opts.newPolicy(); s.policy == nil {
			panic("scope: WithPolicy's constructor returned a nil Policy")
		}
	}
	switch s.policy.(type) {
	case failFast, supervise:
		s.successNoop = true
	}
	if s.opts.timeoutSet {
		ctx, s.release = context.WithTimeoutCause(ctx, s.opts.timeout, &timeoutError{s.opts.timeout})
	}
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	s.done = s.ctx.Done()
	if s.opts.limit > 0 {
		s.lim = newLimiter(s.opts.limit)
	}
	if s.opts.stuckReport != nil {
		s.track = true
		s.running = make(map[int]string)
	}
	return s
}

// Go starts task in the scope, with the scope's context. Once the scope is cancelled, Go starts
// nothing: the task is skipped and counted by Skipped. In a scope with a Limit, Go blocks until
// a running task ends or the scope is cancelled; then the task is skipped. A nil task panics.
func (s *Scope) Go(task func(ctx context.Context) error) {
	if task == nil {
		panic("scope: nil task")
	}
	if s.lim == nil {
		// The hot path of an unbounded scope: one goroutine and one small closure per task.
		if s.closed.Load() {
			panic("scope: task started after Run returned")
		}
		index := int(s.next.Add(1) - 1)
		if s.cancelled() {
			s.skipped.Add(1)
			return
		}
		s.wg.Add(1)
		go s.runPlain(task, index)
		return
	}
	s.start(taskOf(task, ""), true)
}

// labels gives an unnamed task's goroutine the pprof labels of Run's ctx. A new goroutine
// inherits the labels of the one that started it, which may be a named task's (task=name) that
// ends long before: a bounded worker sets them once, as it starts (a named task's pprof.Do
// restores them as it ends); an unbounded task only once the scope has a named task.
func (s *Scope) labels() { pprof.SetGoroutineLabels(s.ctx) }

// GoNamed is Go for a named task: while it runs, its goroutine carries the pprof labels of
// Run's ctx plus task=name, its failures name it, and OnStuck reports it by name.
//
// An unnamed task never carries the name of another task of its scope: it runs with the pprof
// labels of Run's ctx, except that in a scope without a Limit where no task is named, a task
// keeps the labels of the goroutine that called Go, as a plain go statement would.
func (s *Scope) GoNamed(name string, task func(ctx context.Context) error) {
	if task == nil {
		panic("scope: nil task")
	}
	if !s.named.Load() {
		s.named.Store(true)
	}
	s.start(taskOf(task, name), true)
}

// TryGo is Go without blocking: it returns false, and does not start task, if the scope's Limit
// is reached or the scope is cancelled (then the task counts as skipped).
func (s *Scope) TryGo(task func(ctx context.Context) error) bool {
	if task == nil {
		panic("scope: nil task")
	}
	return s.start(taskOf(task, ""), false)
}

// Skipped returns how many tasks the scope did not run because it had been cancelled. A task
// that a blocked Go hands over as the scope is cancelled is counted as it is dropped, which may
// be just after Go returns; once Run has returned, the count is final.
func (s *Scope) Skipped() int { return int(s.skipped.Load()) }

func taskOf(fn func(context.Context) error, name string) task { return task{fn: fn, name: name} }

// start hands t to the scope and reports whether it was accepted.
func (s *Scope) start(t task, block bool) bool {
	if s.closed.Load() {
		panic("scope: task started after Run returned")
	}
	t.index = int(s.next.Add(1) - 1)
	if s.cancelled() {
		s.skip(&t)
		return false
	}
	s.wg.Add(1)
	if s.lim == nil {
		go s.runUnbounded(t)
		return true
	}
	return s.handOff(t, block)
}

// cancelled reports whether the scope is cancelled. A receive from the done channel that
// finds it open takes no lock, where ctx.Err does before Go 1.26.
func (s *Scope) cancelled() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *Scope) skip(t *task) {
	s.skipped.Add(1)
	if t.settle != nil {
		t.settle(context.Cause(s.ctx))
	}
}

// runPlain runs a task started by Go in an unbounded scope.
func (s *Scope) runPlain(fn func(context.Context) error, index int) {
	if s.named.Load() {
		s.labels()
	}
	s.run(task{fn: fn, index: index})
}

// runUnbounded runs t, started by GoNamed, TryGo or Spawn in an unbounded scope.
func (s *Scope) runUnbounded(t task) {
	if t.name == "" && s.named.Load() {
		s.labels()
	}
	s.run(t)
}

// run runs one task in the current goroutine and records how it ended.
func (s *Scope) run(t task) {
	if s.track {
		s.mu.Lock()
		s.running[t.index] = t.name
		s.mu.Unlock()
	}
	var c panics.Catcher
	var err error
	defer s.ended(&t, &c, &err)
	defer c.Recover()
	if t.name != "" {
		err = s.callNamed(&t)
	} else {
		err = t.fn(s.ctx)
	}
	c.Returned()
}

// callNamed calls a named task with its pprof label set on the goroutine.
func (s *Scope) callNamed(t *task) (err error) {
	pprof.Do(s.ctx, pprof.Labels("task", t.name), func(ctx context.Context) { err = t.fn(ctx) })
	return err
}

// ended records the outcome of t, then releases its count in wg.
func (s *Scope) ended(t *task, c *panics.Catcher, errp *error) {
	err := *errp
	var failure error
	var pe *PanicError
	echo := false
	switch {
	case c.Panic != nil:
		pe = &PanicError{Name: t.name, Index: t.index, Value: c.Panic.Value, Stack: c.Panic.Stack}
		failure, err = pe, pe
	case c.Goexit:
		failure = &TaskError{Name: t.name, Index: t.index, Err: ErrGoexit}
		err = failure
	case err != nil:
		if s.isEcho(err) {
			echo = true
		} else {
			failure = &TaskError{Name: t.name, Index: t.index, Err: err}
		}
	}
	if echo && !s.echoed.Load() {
		// Not a failure, and cheap: many tasks echo a cancellation at once.
		s.echoed.Store(true)
	}
	if failure != nil || (!echo && !s.successNoop) || s.track {
		s.mu.Lock()
		if s.track {
			delete(s.running, t.index)
		}
		switch {
		case echo:
		case pe != nil && !s.opts.returnPanics:
			s.panics = append(s.panics, pe)
			s.cancelLocked(pe)
		default:
			s.decideLocked(t, failure)
		}
		s.mu.Unlock()
	}
	if t.settle != nil {
		t.settle(err)
	}
	s.wg.Done()
}

// decideLocked applies the policy to a task's outcome. s.mu must be held.
func (s *Scope) decideLocked(t *task, failure error) {
	cancel, report := s.policy.Decide(failure)
	if failure == nil {
		if cancel && s.cancelLocked(&doneError{"scope: completed by task " + taskLabel(t.name, t.index)}) {
			s.won, s.winner = true, t.index
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
	if !s.cancelled() {
		return false
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Cause(s.ctx))
}

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

// join waits for every task, reporting stuck tasks if asked, then stops the workers.
func (s *Scope) join() {
	if s.track {
		s.watch()
	} else {
		s.wg.Wait()
	}
	s.closed.Store(true)
	if s.lim != nil {
		s.lim.stop()
	}
}

// watch waits for every task; once the scope is cancelled, if tasks still run after the grace
// period, it reports them.
func (s *Scope) watch() {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-s.done:
	}
	timer := time.NewTimer(s.opts.stuckGrace)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
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
	if len(names) > 0 {
		s.opts.stuckReport(names)
	}
	<-done
}

// result builds Run's error. Every task has ended.
func (s *Scope) result() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if cause := context.Cause(s.ctx); cause != nil && cause != s.cause &&
		(s.echoed.Load() || s.skipped.Load() > 0 || len(s.failures) > 0) {
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
	return errors.Join(errs...)
}

// firstPanic returns the first task panic, or nil: the first re-raised one, or with
// ReturnPanics the first among the failures.
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
