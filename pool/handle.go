package pool

import (
	"context"

	"github.com/corral-go/corral/internal/handle"
)

// A Handle is the result of a task submitted with Call. It resolves exactly once: with the
// task's value and error, with a *PanicError, with ErrGoexit (the task called runtime.Goexit),
// or with the reason the task did not run (an error matching ErrDropped, ErrExpired,
// ErrClosed, ErrFull or the submitter's context cause).
// A Handle is safe for concurrent use. A Handle is made by Call: Wait and Done on a zero
// Handle panic with "pool: zero Handle: use pool.Call", in the calling goroutine.
//
// The task's return synchronizes before a Wait that returns its result, and before a receive
// from Done's channel that returns because the channel is closed.
type Handle[T any] struct {
	c handle.Cell[T]
}

// Done returns a channel that is closed when the handle resolves.
func (h *Handle[T]) Done() <-chan struct{} { return h.c.Done(errZeroHandle) }

// errZeroHandle is what Wait and Done on a zero Handle panic with.
const errZeroHandle = "pool: zero Handle: use pool.Call"

// Wait waits for the handle to resolve and returns the task's value and error. If ctx ends
// first, Wait returns the zero T and context.Cause(ctx); the task is not affected.
func (h *Handle[T]) Wait(ctx context.Context) (T, error) { return h.c.Wait(ctx, errZeroHandle) }

func (h *Handle[T]) resolve(err error) { h.c.Resolve(err) }

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
	h := new(Handle[T])
	h.c.Init()
	run := func(ctx context.Context) error {
		v, err := fn(ctx)
		h.c.Set(v)
		return err
	}
	if err := p.submit(ctx, run, h); err != nil {
		h.resolve(err)
		return h, err
	}
	return h, nil
}
