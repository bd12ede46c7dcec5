// Package panics holds the machinery corral uses to tell how a task's function ended: it
// returned, it panicked (the value and the panicking goroutine's stack are kept), or it called
// runtime.Goexit (as t.FailNow does), which a plain recover cannot see; and the one error type
// of a task's panic (Error), which scope and pool export as PanicError. panics.go holds the
// Catcher and ErrGoexit, error.go the Error.
//
// Usage, in the goroutine that runs the task:
//
//	var c panics.Catcher
//	defer report(&c)   // runs last: c says how the call ended
//	defer c.Recover()  // must be deferred directly, so that recover works
//	err := f()
//	c.Returned()
package panics

import (
	"errors"
	"runtime/debug"
)

// Recovered is a recovered panic value and the stack of the goroutine that panicked, captured
// while it was panicking (so the stack shows the panic site).
type Recovered struct {
	Value any
	Stack []byte
}

// Catcher records how a guarded call ended. The zero value is ready to use; a Catcher is used
// by one goroutine for one call.
type Catcher struct {
	returned bool
	// Panic is set if the call panicked.
	Panic *Recovered
	// Goexit is set if the call neither returned nor panicked: runtime.Goexit ran.
	Goexit bool
}

// Returned marks that the guarded call returned normally. Call it right after the call.
func (c *Catcher) Returned() { c.returned = true }

// Recover must be deferred directly (defer c.Recover()) before the guarded call. If the call
// did not return normally, it recovers a panic into c.Panic, or, when there is no panic to
// recover, records that the goroutine is exiting through runtime.Goexit. A Goexit cannot be
// stopped: the deferred calls registered before Recover still run, then the goroutine ends.
func (c *Catcher) Recover() {
	if c.returned {
		return
	}
	if v := recover(); v != nil {
		c.Panic = &Recovered{Value: v, Stack: debug.Stack()}
		return
	}
	c.Goexit = true
}

// ErrGoexit is the error of a task that called runtime.Goexit (as t.FailNow does) instead of
// returning. scope, pool and queue export this one value as their ErrGoexit, so that
// errors.Is matches it whichever package reported it.
var ErrGoexit = errors.New("corral: task called runtime.Goexit")
