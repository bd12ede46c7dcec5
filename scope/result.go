package scope

import (
	"context"
	"iter"
	"runtime"

	"github.com/corral-go/corral/internal/handle"
	"github.com/corral-go/corral/internal/ring"
)

// A Handle is the future result of one task started with Spawn. It is safe for concurrent use.
// A Handle is made by Spawn: Wait and Done on a zero Handle panic with "scope: zero Handle: use
// scope.Spawn", in the calling goroutine.
//
// The task's return (or its skipping) synchronizes before a Wait that returns its result, and
// before a receive from Done's channel that returns because the channel is closed.
type Handle[T any] struct {
	c handle.Cell[T] // resolved once the task has ended or been skipped
}

// Spawn starts task in s, like Go, and returns a Handle to its value. The task's error counts
// for the scope as with Go. It waits for a slot as Go does: a task that calls Spawn in its own
// full bounded scope, or waits on a Handle whose task waits for a slot, keeps its own slot
// meanwhile, and if every slot is held that way, waits until the scope is cancelled (see Go).
func Spawn[T any](s *Scope, task func(ctx context.Context) (T, error)) *Handle[T] {
	if task == nil {
		panic("scope: nil task")
	}
	h := new(Handle[T])
	h.c.Init()
	s.start(spawnTask(h, task), true)
	return h
}

func spawnTask[T any](h *Handle[T], fn func(context.Context) (T, error)) task {
	return task{
		fn: func(ctx context.Context) error {
			v, err := fn(ctx)
			h.c.Set(v)
			return err
		},
		settle: h.c.Resolve,
	}
}

// Wait blocks until the task has ended, or was skipped, or ctx ends, and returns the task's
// value and error. The error is what the task returned; a *PanicError if it panicked; a
// *TaskError wrapping ErrGoexit if it called runtime.Goexit; the scope's cancellation cause if
// it was skipped. If ctx ends first, Wait returns the zero T and context.Cause(ctx): the
// waiter stops waiting, and the task goes on, still owned (and joined) by its scope. Once Run
// has returned, Wait does not block.
func (h *Handle[T]) Wait(ctx context.Context) (T, error) { return h.c.Wait(ctx, errZeroHandle) }

// Done returns a channel that is closed when Wait would not block.
func (h *Handle[T]) Done() <-chan struct{} { return h.c.Done(errZeroHandle) }

// errZeroHandle is what Wait and Done on a zero Handle panic with.
const errZeroHandle = "scope: zero Handle: use scope.Spawn"

// First runs tasks concurrently under the FirstSuccess Joiner and returns the value of the
// first one to succeed, with Run's error; the others are then cancelled and joined. A task
// that succeeds after the scope was cancelled from outside (ctx, or WithTimeout) still wins;
// Run's error is then that cancellation if it cut another task short (see Run), else nil. If
// none succeeds, First returns the zero T and Run's error, which then holds every failure and
// is never nil. opts are Run's; a WithJoiner among them is overridden. WithLimit starts the
// tasks in order as slots free up, which makes a simple hedge: a task that succeeds early
// stops the later ones from starting.
//
// First with no tasks, which could neither succeed nor fail, panics, as does a nil task.
func First[T any](ctx context.Context, tasks []func(ctx context.Context) (T, error), opts ...Option) (T, error) {
	if len(tasks) == 0 {
		panic("scope: First with no tasks")
	}
	for _, t := range tasks {
		if t == nil {
			panic("scope: nil task")
		}
	}
	handles := make([]*Handle[T], len(tasks))
	var sc *Scope
	err := Run(ctx, func(s *Scope) error {
		sc = s
		for i, t := range tasks {
			handles[i] = Spawn(s, t)
		}
		return nil
	}, append(opts[:len(opts):len(opts)], WithJoiner(FirstSuccess))...)
	var zero T
	if !sc.won {
		return zero, err
	}
	v, _ := handles[sc.winner].c.Result()
	return v, err
}

// Map calls f on every element of in, concurrently, and returns the results in the order of in.
// At most n calls run at once, where n is set by WithLimit (default runtime.GOMAXPROCS(0);
// WithLimit(0) means no limit). Failures and cancellation follow Run with opts; the result has
// len(in) elements, and an element whose call failed or did not run holds what f returned or
// the zero R.
func Map[T, R any](ctx context.Context, in []T, f func(ctx context.Context, v T) (R, error), opts ...Option) ([]R, error) {
	if f == nil {
		panic("scope: nil func")
	}
	out := make([]R, len(in))
	err := Run(ctx, func(s *Scope) error {
		for i, v := range in {
			s.Go(func(ctx context.Context) error {
				r, err := f(ctx, v)
				out[i] = r
				return err
			})
		}
		return nil
	}, withDefaultLimit(opts)...)
	return out, err
}

func withDefaultLimit(opts []Option) []Option {
	return append([]Option{WithLimit(runtime.GOMAXPROCS(0))}, opts...)
}

// MapSeq is Map over a sequence, yielding results lazily in the order of in. At most n calls
// run at once and at most n results wait to be consumed, where n is set by WithLimit
// (default, and for WithLimit(0), runtime.GOMAXPROCS(0)).
//
// The goroutine that ranges over the sequence drives in itself, with iter.Pull: it asks in for
// the next element only when the window of n calls has room, and yields a result that is ready
// before it asks for more. No goroutine iterates in on its own, so in is never read ahead of
// the window, and when the consumer stops early (break) nothing waits for in: the range
// statement ends once the calls have returned. The price: while that goroutine waits for in's
// next element, it yields nothing, so an input that is slow between elements delays results
// already computed (with WithLimit(1), in is asked for an element only after the previous result
// was consumed).
//
// The sequence yields (r, nil) for each call that succeeded, in the order of in, and stops at
// the first call that failed or was skipped, whatever the Joiner (calls still running then are
// cancelled only if the Joiner cancels; either way they are joined). Once the scope is
// cancelled, no more of in is read, but results already computed are still yielded. Unless
// every element of in was mapped and yielded, or the consumer stopped, the sequence ends with
// (zero R, err): err is Run's error (which holds every failure) or, if that is nil, the scope's
// cancellation cause (or, if the scope was not cancelled, the failed call's error), so that a
// computed result is never dropped without an error; a non-nil Run error is yielded last in
// any case. When the consumer stops early (break), the scope is cancelled and every call has
// returned before the range statement ends. A panic in in, in f or in the loop body is raised
// in the consumer's goroutine once every call has returned.
func MapSeq[T, R any](ctx context.Context, in iter.Seq[T], f func(ctx context.Context, v T) (R, error), opts ...Option) iter.Seq2[R, error] {
	if in == nil || f == nil {
		panic("scope: nil sequence or func")
	}
	return func(yield func(R, error) bool) {
		m := seqMap[T, R]{in: in, f: f, yield: yield}
		err := Run(ctx, m.run, append(opts[:len(opts):len(opts)], boundedLimit)...)
		if m.stopped {
			return
		}
		if err == nil {
			err = m.cut
		}
		if err != nil {
			var zero R
			yield(zero, err)
		}
	}
}

// seqMap is one range over a MapSeq sequence.
type seqMap[T, R any] struct {
	in      iter.Seq[T]
	f       func(ctx context.Context, v T) (R, error)
	yield   func(R, error) bool
	stopped bool  // the consumer broke out of the loop
	cut     error // why not every element was delivered, for when Run's error is nil
}

// run is the body of the MapSeq scope: it keeps a window of up to the scope's limit calls
// running, in the order of in, and yields each result in that order.
func (m *seqMap[T, R]) run(s *Scope) error {
	n := s.opts.limit
	next, stop := iter.Pull(m.in)
	defer stop()
	window := ring.New[*Handle[R]](n, n) // the calls started and not yet yielded, oldest first
	more := true                         // in may have more elements
	for {
		if more && window.Len() < n && (window.Len() == 0 || !(*window.Front()).c.Ready()) {
			if s.cancelled() {
				// Start nothing more, but deliver what has been computed.
				more, m.cut = false, context.Cause(s.ctx)
				continue
			}
			v, ok := next()
			if !ok {
				more = false
				continue
			}
			window.Push(Spawn(s, func(ctx context.Context) (R, error) { return m.f(ctx, v) }))
			continue
		}
		if window.Len() == 0 {
			return nil
		}
		sl := window.Pop()
		<-sl.c.Done(errZeroHandle)
		v, err := sl.c.Result()
		if err != nil {
			// Failed or skipped: the results behind it are not delivered.
			if m.cut = context.Cause(s.ctx); m.cut == nil {
				m.cut = err // a Joiner that neither cancels nor reports
			}
			return nil
		}
		if !m.yield(v, nil) {
			m.stopped = true
			s.stop()
			return nil
		}
	}
}

// stop cancels the scope because its consumer stopped; this is not a failure.
func (s *Scope) stop() {
	s.mu.Lock()
	s.cancelLocked(&doneError{"scope: consumer stopped"})
	s.mu.Unlock()
}

// boundedLimit, applied after the caller's options, gives a scope without a limit one of
// runtime.GOMAXPROCS(0).
var boundedLimit = optionFunc(func(o *options) {
	if o.limit == 0 {
		o.limit = runtime.GOMAXPROCS(0)
	}
})
