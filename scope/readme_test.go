package scope_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/corral-go/corral/scope"
)

// The README's scope snippets, as written there, with stubs for what they call.
func TestREADMESnippets(t *testing.T) {
	ctx := context.Background()
	urls := []string{"a.example", "b.example", "c.example"}
	var inFlight, most atomic.Int32
	fetch := func(ctx context.Context, url string) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return nil
	}
	// github.com/corral-go/corral/scope
	err := scope.Run(ctx, func(s *scope.Scope) error {
		for _, url := range urls {
			s.GoNamed(url, func(ctx context.Context) error { return fetch(ctx, url) })
		}
		return nil
	}, scope.WithLimit(2))
	noErr(t, err)
	isTrue(t, most.Load() <= 2, "at most 2 at a time: %d", most.Load())

	type User struct{ ID int }
	api := struct {
		User func(context.Context, int) (User, error)
	}{
		User: func(_ context.Context, id int) (User, error) { return User{id}, nil },
	}
	ids := []int{3, 1, 2}
	users, err := scope.Map(ctx, ids, func(ctx context.Context, id int) (User, error) {
		return api.User(ctx, id)
	}, scope.WithLimit(8)) // results in the order of ids; the first failure cancels the rest
	noErr(t, err)
	equal(t, []User{{3}, {1}, {2}}, users)

	type replica struct {
		Get func(context.Context, string) (string, error)
	}
	replicaA := replica{func(ctx context.Context, key string) (string, error) { <-ctx.Done(); return "", ctx.Err() }}
	replicaB := replica{func(context.Context, string) (string, error) { return "b", nil }}
	key := "k"
	winner, err := scope.First(ctx, []func(context.Context) (string, error){
		func(ctx context.Context) (string, error) { return replicaA.Get(ctx, key) },
		func(ctx context.Context) (string, error) { return replicaB.Get(ctx, key) },
	}) // the first success wins; the other is cancelled and joined
	noErr(t, err)
	equal(t, "b", winner)

	// And Errors, which the README's comparison table names.
	err = scope.Run(ctx, func(s *scope.Scope) error {
		s.Go(func(context.Context) error { return errA })
		s.Go(func(context.Context) error { return errB })
		return nil
	}, scope.WithJoiner(scope.Supervise))
	equal(t, 2, len(scope.Errors(err)))
	isTrue(t, errors.Is(err, errA) && errors.Is(err, errB), "%v", err)
}
