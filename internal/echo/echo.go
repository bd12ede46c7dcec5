// Package echo is the rule scope and pool share for telling a task's failure from the echo of
// its group's cancellation: once the context a task ran with has ended, an error that is a
// context error, or that matches the context's cause, says only that the context ended, and
// fail-fast reporting does not count it as a failure of its own.
package echo

import (
	"context"
	"errors"
)

// Of reports whether err only echoes the end of ctx: it matches context.Canceled,
// context.DeadlineExceeded or context.Cause(ctx). Call it once ctx has ended (the caller
// checks that in the way it can afford); for a ctx that has not ended, only the first two
// count.
func Of(ctx context.Context, err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	cause := context.Cause(ctx)
	return cause != nil && errors.Is(err, cause)
}
