package scope

import (
	"context"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"sync/atomic"

	"github.com/corral-go/corral/internal/panics"
)

// A Scope owns the tasks started in it. It exists only while Run runs: Run hands it to its body
// and returns once every task started in it has returned. A Scope is made by Run: Go, GoNamed,
// TryGo and Spawn on a zero Scope panic at once, in the calling goroutine, with "scope: zero
// Scope: use scope.Run".
//
// A Scope is safe for concurrent use: the body, its tasks and other goroutines may start tasks
// at the same time. Calling Go, GoNamed, TryGo or Spawn after Run has returned panics, in the
// calling goroutine, with "scope: task started after Run returned". A call that races Run's
// return (from a goroutine that is not a task of the scope) does one or the other: it starts
// its task before Run has joined the last one, and Run waits for it too, or it panics and starts
// nothing.
type Scope struct {
	ctx         context.Context // the tasks' context, cancelled with a cause
	done        <-chan struct{} // ctx.Done(), made once
	cancel      context.CancelCauseFunc
	release     context.CancelFunc // releases the WithTimeout context, if any
	opts        options
	joiner      Joiner        // made for this scope by the WithJoiner constructor; used under mu
	successNoop bool          // the joiner ignores successes, so a plain success skips the lock
	track       bool          // WithStuckReport is set: running tasks are tracked by index
	timeout     *TimeoutError // WithTimeout's cancellation cause, if set

	tasks   joinCount    // tasks handed to the scope that have not ended; closed by the join
	next    atomic.Int64 // start index of the next task
	skipped atomic.Int64 // tasks not run because the scope was cancelled
	named   atomic.Bool  // set by the first GoNamed; never reset
	echoed  atomic.Bool  // a task or the body returned the scope's own cancellation

	lim *limiter // bounded scopes only (opts.limit > 0): the slots and the workers

	mu       sync.Mutex // guards the fields below
	cause    error      // the cause the scope cancelled itself with, if it did
	won      bool       // the Joiner completed the scope on a success
	winner   int        // the start index of that task
	bodyErr  error      // the body's non-echo error
	failures []error    // reported failures, root cause first
	panics   []*PanicError
	running  map[int]string // names of the tasks running, by start index (only if track)
	// interrupted lists the tasks that echoed the WithTimeout cancellation, in end order.
	interrupted []*TaskError

	stuckPanic *PanicError // the stuck report's panic; used only by the goroutine that called Run
}

// task is a unit of work as the scope passes it around: by value, so that handing it to a
// worker allocates nothing.
type task struct {
	fn     func(context.Context) error
	name   string
	index  int
	settle func(err error) // if set, called once with the task's outcome when it ends or is skipped
	err    error           // the outcome for settle, from the task's end until it is published
}

// Run calls body with a new Scope and returns once body and every task started in the scope
// have returned. Tasks get a context derived from ctx that is cancelled, with a cause (see
// context.Cause), when the scope is cancelled: by the Joiner (by default the first failure),
// by the parent ctx, by WithTimeout, or when body fails. The context is cancelled when
// Run returns in any case. A cancellation without a failure (a Joiner completing the scope on
// a success, a MapSeq consumer stopping, Run returning) has a cause that matches
// context.Canceled, as a plain cancel's does, and says why ("scope: Run returned").
//
// Run returns nil or an error in which errors.Is and errors.As find every reported failure,
// root cause first: a task failure is a *TaskError (a *PanicError with WithPanicsAsErrors); an
// error returned by body is returned as is. Errors lists them. A task or body error that is
// only the echo of the scope's own cancellation (it matches ctx.Err() or context.Cause(ctx)
// after the scope was cancelled) is not a failure. If the scope was cancelled from outside
// (parent or WithTimeout) and that affected the work (an echo, a skipped task, or a failure),
// the cancellation cause comes first.
//
// If a task panicked (and WithPanicsAsErrors is not set), Run cancels the scope, waits for
// every task, then panics with a *PanicError carrying the first panic's value and stack, and
// every other panic and failure (so a root cause that was an error, not a panic, is among those
// carried). A panic in the Joiner's Decide is handled the same way, with or without
// WithPanicsAsErrors.
//
// If body panics or calls runtime.Goexit, Run cancels the scope, waits for every task and lets
// the panic or Goexit go on. If a task panicked too, with or without WithPanicsAsErrors, Run
// panics instead with that task's *PanicError (the first one), which carries every other panic
// and failure and the body's panic (Name "body", Index -1): no panic is lost. A panic or Goexit
// of the stuck report does not end the wait either (see WithStuckReport).
//
// What a goroutine did before a call of Go, GoNamed, TryGo or Spawn that starts a task
// happens before the task starts. The return of body and of every task started in the scope synchronizes before Run
// returns (or panics), as a sync.WaitGroup's Done does before its Wait returns.
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
	phase := inBody
	defer func() {
		if phase == joined {
			return
		}
		var stack []byte
		if phase == inBody {
			// body panicked or called runtime.Goexit: the scope must still not outlive Run.
			stack = debug.Stack()
			s.mu.Lock()
			s.cancelLocked(&bodyError{})
			s.mu.Unlock()
			s.join()
			s.finish()
		} // else the stuck report called runtime.Goexit, and stuckEnded completed the join
		if p := s.raised(true); p != nil {
			if v := recover(); v != nil { // nil for Goexit
				panics.Carry(p, panics.ScopeError("body", -1, &panics.Recovered{Value: v, Stack: stack}))
			}
			panic(p)
		}
	}()
	err := body(s)
	phase = joining
	s.bodyEnded(err)
	s.join()
	phase = joined
	err = s.result()
	s.finish()
	if p := s.raised(false); p != nil {
		panic(p)
	}
	return err
}

// Where Run is, for its deferred unwinding.
const (
	inBody  = iota // body runs
	joining        // body returned; the join runs
	joined         // every task has returned
)

func newScope(ctx context.Context, opts []Option) *Scope {
	s := &Scope{}
	for _, o := range opts {
		if o == nil {
			panic("scope: nil option")
		}
		o.apply(&s.opts)
	}
	s.joiner = failFast{}
	if s.opts.newJoiner != nil {
		if s.joiner = s.opts.newJoiner(); s.joiner == nil {
			panic("scope: WithJoiner's constructor returned a nil Joiner")
		}
	}
	switch s.joiner.(type) {
	case failFast, supervise:
		s.successNoop = true
	}
	if s.opts.timeoutSet {
		s.timeout = &TimeoutError{Timeout: s.opts.timeout}
		ctx, s.release = context.WithTimeoutCause(ctx, s.opts.timeout, s.timeout)
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
// nothing: the task is skipped and counted by Skipped. In a scope WithLimit, Go blocks until
// a running task ends or the scope is cancelled; then the task is skipped. A nil task panics.
//
// A task that calls Go in its own bounded scope keeps its slot while Go waits: if every slot is
// held by a task doing that, none can go on until the scope is cancelled (WithTimeout, the
// parent, a failure elsewhere), and the tasks they wanted to start are skipped. Tasks that
// start tasks should use TryGo, or leave room in the limit.
func (s *Scope) Go(task func(ctx context.Context) error) {
	if task == nil {
		panic("scope: nil task")
	}
	if s.done == nil {
		panic(errZeroScope)
	}
	if s.lim == nil {
		// The hot path of an unbounded scope: one goroutine and one small closure per task.
		if !s.tasks.add() {
			panic(errStartAfterRun)
		}
		index := int(s.next.Add(1) - 1)
		if s.cancelled() {
			s.skipped.Add(1)
			s.tasks.done()
			return
		}
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
// Run's ctx plus task=name, its failures name it, and the stuck report names it. It waits for
// a slot as Go does, with the same trap for a task that calls it in its own bounded scope: if
// every slot is held by a task waiting that way, they wait until the scope is cancelled (see
// Go).
//
// An unnamed task never carries the name of another task of its scope: it runs with the pprof
// labels of Run's ctx, except that in a scope without a limit where no task is named, a task
// keeps the labels of the goroutine that called Go, as a plain go statement would.
func (s *Scope) GoNamed(name string, task func(ctx context.Context) error) {
	if task == nil {
		panic("scope: nil task")
	}
	if s.done == nil {
		panic(errZeroScope)
	}
	if !s.named.Load() {
		s.named.Store(true)
	}
	s.start(taskOf(task, name), true)
}

// TryGo is Go without blocking: it returns false, and does not start task, if the scope's limit
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
	if s.done == nil {
		panic(errZeroScope)
	}
	if !s.tasks.add() {
		panic(errStartAfterRun)
	}
	t.index = int(s.next.Add(1) - 1)
	if s.cancelled() {
		s.skip(&t)
		s.tasks.done()
		return false
	}
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
	t := task{fn: fn, index: index}
	s.run(&t)
}

// runUnbounded runs t, started by GoNamed, TryGo or Spawn in an unbounded scope.
func (s *Scope) runUnbounded(t task) {
	if t.name == "" && s.named.Load() {
		s.labels()
	}
	s.run(&t)
}

// run runs one task in the current goroutine and records how it ended. In an unbounded scope
// it publishes the end too; in a bounded one, the worker does, once it has freed the slot.
func (s *Scope) run(t *task) {
	if s.track {
		s.mu.Lock()
		s.running[t.index] = t.name
		s.mu.Unlock()
	}
	var c panics.Catcher
	var err error
	defer s.ended(t, &c, &err)
	defer c.Recover()
	if t.name != "" {
		err = s.callNamed(t)
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
