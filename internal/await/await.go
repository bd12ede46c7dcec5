// Package await is the wait for a future result that its waiter may give up: the one copy
// that scope's and pool's Handle.Wait share.
package await

import "context"

// Done waits until done is closed or ctx ends, and reports whether done was closed. A done
// that is already closed wins over a ctx that has already ended: a result that is ready is
// never hidden by the waiter's cancellation.
func Done(ctx context.Context, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
