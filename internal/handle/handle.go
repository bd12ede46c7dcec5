// Package handle is the result cell behind pool.Handle and scope.Handle: a value and an error
// written once by the goroutine that ends a task, and read by any number of waiters.
//
// The task's goroutine calls Set (optional) and then Resolve, once. Resolve synchronizes
// before every Wait that returns the result, every receive from Done's channel that returns
// because it is closed, and every Ready that reports true. A Cell is made ready with Init and
// must not be copied after; the zero Cell's Wait and Done panic with the message they are
// given, so that each package names its own constructor.
package handle

import (
	"context"

	"github.com/corral-go/corral/internal/await"
)

// Cell holds one task's result. See the package doc.
type Cell[T any] struct {
	done chan struct{} // closed by Resolve; nil until Init
	val  T             // written by Set before done is closed
	err  error         // written by Resolve before done is closed
}

// Init makes c ready to resolve. Call it once, before c is shared.
func (c *Cell[T]) Init() { c.done = make(chan struct{}) }

// Set records the task's value. Call it, if at all, before Resolve, from the goroutine that
// will call Resolve.
func (c *Cell[T]) Set(v T) { c.val = v }

// Resolve records the task's error and releases the waiters. Call it exactly once.
func (c *Cell[T]) Resolve(err error) {
	c.err = err
	close(c.done)
}

// Done returns a channel that is closed once c is resolved. It panics with zeroMsg if c was
// not made by Init.
func (c *Cell[T]) Done(zeroMsg string) <-chan struct{} {
	if c.done == nil {
		panic(zeroMsg)
	}
	return c.done
}

// Wait waits until c is resolved and returns its value and error, or, if ctx ends first, the
// zero T and context.Cause(ctx). It panics with zeroMsg if c was not made by Init.
func (c *Cell[T]) Wait(ctx context.Context, zeroMsg string) (T, error) {
	if c.done == nil {
		panic(zeroMsg)
	}
	if !await.Done(ctx, c.done) {
		var zero T
		return zero, context.Cause(ctx)
	}
	return c.val, c.err
}

// Ready reports whether c is resolved, without waiting.
func (c *Cell[T]) Ready() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Result returns c's value and error. Call it only once c is resolved (Ready, or after a
// receive from Done).
func (c *Cell[T]) Result() (T, error) { return c.val, c.err }
