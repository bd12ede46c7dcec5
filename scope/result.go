package scope

import (
	"context"
	"iter"
	"runtime"
)

// A Handle is the future result of one task started with Spawn. It is safe for concurrent use.
type Handle[T any] struct {
	done chan struct{} // closed once the task has ended or been skipped
	val  T             // written before done is closed
	err  error         // written before done is closed
}

// Spawn starts task in s, like Go, and returns a Handle to its value. The task's error counts
// for the scope as with Go.
func Spawn[T any](s *Scope, task func(ctx context.Context) (T, error)) *Handle[T] {
	if task == nil {
		panic("scope: nil task")
	}
	h := &Handle[T]{done: make(chan struct{})}
	s.start(spawnTask(h, task), true)
	return h
}

func spawnTask[T any](h *Handle[T], fn func(context.Context) (T, error)) task {
	return task{
		fn: func(ctx context.Context) error {
			v, err := fn(ctx)
			h.val = v
			return err
		},
		settle: func(err error) {
			h.err = err
			close(h.done)
		},
	}
}

// Wait blocks until the task has ended, or was skipped, and returns its value and error. The
// error is what the task returned; a *PanicError if it panicked; a *TaskError wrapping
// ErrGoexit if it called runtime.Goexit; the scope's cancellation cause if it was skipped. Once
// Run has returned, Wait does not block.
func (h *Handle[T]) Wait() (T, error) {
	<-h.done
	return h.val, h.err
}

// Done returns a channel that is closed when Wait would not block.
func (h *Handle[T]) Done() <-chan struct{} { return h.done }

// First runs tasks concurrently under the FirstSuccess policy and returns the value of the first
// one to succeed; the others are then cancelled and joined. If none succeeds, it returns the
// zero T and Run's error, which holds every failure. opts are Run's; a WithPolicy among them is
// overridden. With a Limit, tasks are started in order as slots free up, which makes a simple
// hedge: a task that succeeds early stops the later ones from starting.
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
	}, append(opts[:len(opts):len(opts)], WithPolicy(FirstSuccess))...)
	var zero T
	if !sc.won {
		return zero, err
	}
	return handles[sc.winner].val, err
}

// Map calls f on every element of in, concurrently, and returns the results in the order of in.
// At most n calls run at once, where n is set by a Limit option (default runtime.GOMAXPROCS(0);
// Limit(0) means no limit). Failures and cancellation follow Run with opts; the result has
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
	return append([]Option{Limit(runtime.GOMAXPROCS(0))}, opts...)
}

// MapSeq is Map over a sequence, yielding results lazily in the order of in. At most n calls
// run at once and at most n results wait to be consumed, where n is set by a Limit option
// (default, and for Limit(0), runtime.GOMAXPROCS(0)).
//
// The goroutine that ranges over the sequence drives in itself, with iter.Pull: it asks in for
// the next element only when the window of n calls has room, and yields a result that is ready
// before it asks for more. No goroutine iterates in on its own, so in is never read ahead of
// the window, and when the consumer stops early (break) nothing waits for in: the range
// statement ends once the calls have returned. The price: while that goroutine waits for in's
// next element, it yields nothing, so an input that is slow between elements delays results
// already computed (with Limit(1), in is asked for an element only after the previous result
// was consumed).
//
// The sequence yields (r, nil) for each call that succeeded, in the order of in, and stops at
// the first call that failed or was skipped, whatever the policy (calls still running then are
// cancelled only if the policy cancels; either way they are joined). Once the scope is
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
		var (
			stopped bool  // the consumer broke out of the loop
			cut     error // why not every element was delivered, for when Run's error is nil
		)
		err := Run(ctx, func(s *Scope) error {
			n := s.opts.limit
			next, stop := iter.Pull(in)
			defer stop()
			window := make([]*Handle[R], n) // a ring: count slots from head, oldest first
			head, count := 0, 0
			more := true // in may have more elements
			for {
				if more && count < n && (count == 0 || !window[head].ready()) {
					if s.cancelled() {
						// Start nothing more, but deliver what has been computed.
						more, cut = false, context.Cause(s.ctx)
						continue
					}
					v, ok := next()
					if !ok {
						more = false
						continue
					}
					window[(head+count)%n] = Spawn(s, func(ctx context.Context) (R, error) { return f(ctx, v) })
					count++
					continue
				}
				if count == 0 {
					return nil
				}
				sl := window[head]
				window[head] = nil
				head, count = (head+1)%n, count-1
				<-sl.done
				if sl.err != nil {
					// Failed or skipped: the results behind it are not delivered.
					if cut = context.Cause(s.ctx); cut == nil {
						cut = sl.err // a policy that neither cancels nor reports
					}
					return nil
				}
				if !yield(sl.val, nil) {
					stopped = true
					s.stop()
					return nil
				}
			}
		}, append(opts[:len(opts):len(opts)], boundedLimit)...)
		if stopped {
			return
		}
		if err == nil {
			err = cut
		}
		if err != nil {
			var zero R
			yield(zero, err)
		}
	}
}

// stop cancels the scope because its consumer stopped; this is not a failure.
func (s *Scope) stop() {
	s.mu.Lock()
	s.cancelLocked(&doneError{"scope: consumer stopped"})
	s.mu.Unlock()
}

// ready reports whether the task has ended, without waiting.
func (h *Handle[T]) ready() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// boundedLimit, applied after the caller's options, gives a scope without a Limit one of
// runtime.GOMAXPROCS(0).
var boundedLimit = optionFunc(func(o *options) {
	if o.limit == 0 {
		o.limit = runtime.GOMAXPROCS(0)
	}
})
