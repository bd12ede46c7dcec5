package scope

import "sync/atomic"

// errStartAfterRun is what Go, GoNamed, TryGo and Spawn panic with once Run has returned.
const errStartAfterRun = "scope: task started after Run returned"

// errZeroScope is what Go, GoNamed, TryGo and Spawn panic with on a zero Scope.
const errZeroScope = "scope: zero Scope: use scope.Run"

// joinCount counts the tasks handed to a scope that have not ended, and closes the scope to new
// tasks in the same atomic step in which the join sees the count at zero. So a start either
// counts its task before the join closes, and the join waits for it, or finds the count closed
// and adds nothing. A sync.WaitGroup cannot do this: an Add from zero that races a Wait is
// misuse, and Wait returning does not stop the next Add.
//
// Starting a task costs one atomic add, ending it one more. add and done may be called by any
// goroutine; tryClose, and the receive from zero, only by the one goroutine that joins.
type joinCount struct {
	// state is the count times countOne, plus the waiting and closed bits.
	state atomic.Int64
	// zero receives when the count falls to zero while the join waits. Made by the join before
	// it sets the waiting bit, and read by done only after it saw that bit, so that the atomic
	// state orders the write before the read; capacity 1, so done never blocks.
	zero chan struct{}
}

const (
	closedBit  = 1 << 0 // set by the join, never reset: the count is final (0)
	waitingBit = 1 << 1 // the join waits on zero
	countOne   = 1 << 2 // one task
)

// add counts a task, unless the scope is closed; it reports whether it counted it. Once
// closed, the state is never read again, so a refused add is not undone.
func (c *joinCount) add() bool { return c.state.Add(countOne)&closedBit == 0 }

// done uncounts a task that has ended (or was skipped or refused).
func (c *joinCount) done() {
	if c.state.Add(-countOne) == waitingBit {
		select {
		case c.zero <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// tryClose closes the scope and reports true if no task is counted. Otherwise it reports
// false, and the join waits for a receive from zero before it tries again: tasks may start
// tasks, so the count may rise again after it fell to zero.
func (c *joinCount) tryClose() bool {
	for {
		v := c.state.Load()
		if v < countOne {
			if c.state.CompareAndSwap(v, closedBit) {
				return true
			}
			continue
		}
		if v&waitingBit != 0 {
			return false
		}
		if c.zero == nil {
			c.zero = make(chan struct{}, 1)
		}
		if c.state.CompareAndSwap(v, v|waitingBit) {
			return false
		}
	}
}
