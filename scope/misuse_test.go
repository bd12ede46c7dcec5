package scope_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/scope"
)

// Bad settings panic at construction, in the caller's goroutine, with a message that names the
// option and what is wrong with it.
func TestBadSettingsPanicNamingTheSetting(t *testing.T) {
	report := func(context.Context, []string) {}
	body := func(*scope.Scope) error { return nil }
	mapNil := func() {
		_, _ = scope.Map(context.Background(), []int{1}, func(context.Context, int) (int, error) { return 0, nil }, nil)
	}
	nilJoiner := scope.WithJoiner(func() scope.Joiner { return nil })
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"scope: WithLimit(-1): negative limit", func() { scope.WithLimit(-1) }},
		{"scope: WithJoiner(nil): nil constructor", func() { scope.WithJoiner(nil) }},
		{"scope: WithStuckReport(1s, nil): nil report", func() { scope.WithStuckReport(time.Second, nil) }},
		{"scope: WithStuckReport(-1s, ...): negative grace", func() { scope.WithStuckReport(-time.Second, report) }},
		{"scope: nil option", func() { _ = scope.Run(context.Background(), body, scope.WithLimit(1), nil) }},
		{"scope: nil option", mapNil},
		{"scope: WithJoiner's constructor returned a nil Joiner", func() { _ = scope.Run(context.Background(), body, nilJoiner) }},
	} {
		equal(t, any(c.want), mustPanic(t, c.f))
	}
}

// The zero Scope and the zero Handle panic at once, in the caller's goroutine, saying what to
// use, instead of dereferencing nil on a task's goroutine.
func TestZeroValuesPanicSayingWhatToUse(t *testing.T) {
	var s scope.Scope
	task := func(context.Context) error { return nil }
	equal(t, any("scope: zero Scope: use scope.Run"), mustPanic(t, func() { s.Go(task) }))
	equal(t, any("scope: zero Scope: use scope.Run"), mustPanic(t, func() { s.GoNamed("x", task) }))
	equal(t, any("scope: zero Scope: use scope.Run"), mustPanic(t, func() { s.TryGo(task) }))
	equal(t, any("scope: zero Scope: use scope.Run"), mustPanic(t, func() {
		scope.Spawn(&s, func(context.Context) (int, error) { return 0, nil })
	}))
	equal(t, 0, s.Skipped(), "a zero Scope has skipped nothing")
	var h scope.Handle[int]
	equal(t, any("scope: zero Handle: use scope.Spawn"), mustPanic(t, func() { _, _ = h.Wait(context.Background()) }))
	equal(t, any("scope: zero Handle: use scope.Spawn"), mustPanic(t, func() { h.Done() }))
}
