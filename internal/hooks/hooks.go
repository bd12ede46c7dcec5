// Package hooks chains the hook functions of corral's packages, so that an option that installs
// hooks of its own (a logger's) keeps the ones the user set, and makes the logging hooks of
// every package's WithLogger (Log).
package hooks

import "context"

// Chain returns a hook that calls first and then then, with the same arguments. A nil hook is
// skipped: Chain returns the other one unchanged, and nil if both are nil, so that a hook left
// unset still costs nothing. If first panics or calls runtime.Goexit, then is not called.
func Chain[E any](first, then func(context.Context, E)) func(context.Context, E) {
	switch {
	case first == nil:
		return then
	case then == nil:
		return first
	}
	return func(ctx context.Context, e E) {
		first(ctx, e)
		then(ctx, e)
	}
}
