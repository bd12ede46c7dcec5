package pool

import (
	"context"

	"github.com/corral-go/corral/internal/await"
)

// A Handle is the result of a task submitted with Call. It resolves exactly once: with the
// task's value and error, with a *PanicError, with ErrGoexit (the task called runtime.Goexit),
// or with the reason the task did not run (an error matching ErrDropped, ErrExpired,
// ErrClosed, ErrFull or the submitter's context cause).
// A Handle is safe for concurrent use. A Handle is made by Call: Wait and Done on a zero
// Handle panic with "pool: zero Handle: use pool.Call", in the calling goroutine.
type Handle[T any] struct {
	done chan struct{}
	val  T     // written before done is closed
	err  error // written before done is closed
}

// Done returns a channel that is closed when the handle resolves.
func (h *Handle[T]) Done() <-chan struct{} {
	if h.done == nil {
		panic(errZeroHandle)
	}
	return h.done
}

// errZeroHandle is what Wait and Done on a zero Handle panic with.
const errZeroHandle = "pool: zero Handle: use pool.Call"

// Wait waits for the handle to resolve and returns the task's value and error. If ctx ends
// first, Wait returns the zero T and context.Cause(ctx); the task is not affected.
func (h *Handle[T]) Wait(ctx context.Context) (T, error) {
	if h.done == nil {
		panic(errZeroHandle)
	}
	if !await.Done(ctx, h.done) {
		var zero T
		return zero, context.Cause(ctx)
	}
	return h.val, h.err
}

func (h *Handle[T]) resolve(err error) {
	h.err = err
	close(h.done)
}

// Call submits fn to p like Submit and returns a Handle for its result. The returned Handle is
// never nil. If the pool does not accept fn, Call returns the same error as Submit would, and
// the Handle is already resolved with it. Unlike Submit, Call allocates (the Handle and its
// channel), and fn's failure goes to the Handle, not to Hooks.OnError. Call waits for room as
// Submit does: under Block, a task that calls Call on its own full pool keeps its worker while
// it waits, and if every worker does that, they wait until their ctx ends or the pool is
// closed (see Pool.Submit).
func Call[T any](ctx context.Context, p *Pool, fn func(ctx context.Context) (T, error)) (*Handle[T], error) {
	if fn == nil {
		panic("pool: Call of a nil func")
	}
	h := &Handle[T]{done: make(chan struct{})}
	run := func(ctx context.Context) error {
		v, err := fn(ctx)
		h.val = v
		return err
	}
	if err := p.submit(ctx, run, h); err != nil {
		h.resolve(err)
		return h, err
	}
	return h, nil
}
