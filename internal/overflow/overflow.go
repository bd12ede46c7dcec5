// Package overflow spells the overflow policies of package pool and of the
// queue's backend contract (queue/driver) the same way: both number their
// policies in the same order, pool with one more (CallerRuns).
package overflow

import "strconv"

// names are the policies' names, by value: Block, Reject, DropNewest,
// DropOldest and pool's CallerRuns.
var names = [...]string{"block", "reject", "drop-newest", "drop-oldest", "caller-runs"}

// Name returns the name of policy o of a type whose policies are 0 to last:
// in lower case, hyphenated, or "Overflow(o)" for a value that is not one.
func Name(o, last int) string {
	if o >= 0 && o <= last && o < len(names) {
		return names[o]
	}
	return "Overflow(" + strconv.Itoa(o) + ")"
}
