package queuetest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// RunZeroBackend checks the rule of a backend whose zero value is not usable (one made with
// its package's New): every exported method of zero, a pointer to such a zero value, panics at
// once, in the caller's goroutine, whatever its arguments, with a message that contains want
// (for instance "mybackend: zero Backend: use mybackend.New", what [driver.Call.Made] says).
// It calls the methods of [driver.Backend] and, where zero implements them, of
// [driver.Admin], [driver.SharedLease], [driver.Reconnecter], [driver.LossCounter],
// [driver.RateLimiter] and [driver.ReceiveStarter], with a zero Delivery where a method takes one, once with valid
// arguments and, where a method checks its arguments, once with invalid ones (a lease of 0, a
// page size of -1, an empty ID, a negative capacity): the check of the zero value comes
// first. extra holds the backend's other exported methods, by name, to check the same way; an
// exported method that is neither called here nor named in extra fails the test, so that a
// method added later cannot escape the rule, and so does a name in extra that the kit calls
// itself.
func RunZeroBackend(t testing.TB, zero driver.Backend, want string, extra map[string]func()) {
	t.Helper()
	ctx := context.Background()
	d := &driver.Delivery{}
	calls := map[string]func(){
		"Open":        func() { _ = zero.Open(ctx, driver.Config{}) },
		"Enqueue":     func() { _, _ = zero.Enqueue(ctx, driver.Message{ID: "x"}) },
		"Receive":     func() { _ = zero.Receive(ctx, time.Second, d) },
		"Start":       func() { _ = zero.Start(ctx, d) },
		"Extend":      func() { _ = zero.Extend(ctx, d, time.Second) },
		"Ack":         func() { _ = zero.Ack(ctx, d) },
		"Nack":        func() { _ = zero.Nack(ctx, d, 0, driver.Attempt{}) },
		"Release":     func() { _ = zero.Release(ctx, d, 0) },
		"Bury":        func() { _, _ = zero.Bury(ctx, d, driver.ReasonPanic, driver.Attempt{}) },
		"DeadLetters": func() { _ = zero.DeadLetters(ctx) },
		"Redrive":     func() { _ = zero.Redrive(ctx, "x") },
		"Purge":       func() { _ = zero.Purge(ctx, "x") },
		"Stats":       func() { _, _ = zero.Stats(ctx) },
		"Close":       func() { _ = zero.Close(ctx) },
	}
	if a, ok := zero.(driver.Admin); ok {
		calls["List"] = func() { _, _ = a.List(ctx, driver.Filter{Limit: 1}) }
		calls["Count"] = func() { _, _ = a.Count(ctx, driver.Filter{}) }
		calls["Get"] = func() { _, _ = a.Get(ctx, "x") }
		calls["Cancel"] = func() { _ = a.Cancel(ctx, "x") }
		calls["SetPaused"] = func() { _ = a.SetPaused(ctx, true) }
	}
	if s, ok := zero.(driver.SharedLease); ok {
		calls["CheckLease"] = func() { _ = s.CheckLease(ctx, time.Second) }
	}
	if r, ok := zero.(driver.Reconnecter); ok {
		calls["Reconnects"] = func() { _ = r.Reconnects() }
	}
	if l, ok := zero.(driver.LossCounter); ok {
		calls["Losses"] = func() { _ = l.Losses() }
	}
	if r, ok := zero.(driver.RateLimiter); ok {
		calls["TakeStart"] = func() { _, _, _ = r.TakeStart(ctx, 1, time.Second) }
	}
	if r, ok := zero.(driver.ReceiveStarter); ok {
		calls["ReceiveStart"] = func() { _ = r.ReceiveStart(ctx, time.Second, d) }
	}
	invalidArguments(calls, zero, d)
	for name, call := range extra {
		if calls[name] != nil {
			t.Errorf("extra names %s, which RunZeroBackend calls itself", name)
		}
		calls[name] = call
	}
	checked := map[string]bool{}
	for name, call := range calls {
		checked[strings.SplitN(name, "(", 2)[0]] = true
		if got := panicOf(call); !strings.Contains(got, want) {
			t.Errorf("%s of a zero Backend: panic %q, want one containing %q", name, got, want)
		}
	}
	typ := reflect.TypeOf(zero)
	for i := range typ.NumMethod() {
		if m := typ.Method(i); !checked[m.Name] {
			t.Errorf("%s of %v is not checked: name it in extra", m.Name, typ)
		}
	}
}

// invalidArguments adds to calls, for the methods of zero that check their arguments, a call
// with arguments they refuse, named "Method(what is wrong)".
func invalidArguments(calls map[string]func(), zero driver.Backend, d *driver.Delivery) {
	ctx := context.Background()
	calls["Open(negative capacity)"] = func() { _ = zero.Open(ctx, driver.Config{Capacity: -1}) }
	calls["Enqueue(no ID)"] = func() { _, _ = zero.Enqueue(ctx, driver.Message{}) }
	calls["Receive(lease 0)"] = func() { _ = zero.Receive(ctx, 0, d) }
	calls["Extend(lease 0)"] = func() { _ = zero.Extend(ctx, d, 0) }
	calls["Nack(delay -1)"] = func() { _ = zero.Nack(ctx, d, -1, driver.Attempt{}) }
	calls["Release(delay -1)"] = func() { _ = zero.Release(ctx, d, -1) }
	calls["Redrive(no ID)"] = func() { _ = zero.Redrive(ctx, "") }
	calls["Purge(no ID)"] = func() { _ = zero.Purge(ctx, "") }
	if a, ok := zero.(driver.Admin); ok {
		calls["List(Limit -1)"] = func() { _, _ = a.List(ctx, driver.Filter{Limit: -1}) }
		calls["Get(no ID)"] = func() { _, _ = a.Get(ctx, "") }
		calls["Cancel(no ID)"] = func() { _ = a.Cancel(ctx, "") }
	}
	if s, ok := zero.(driver.SharedLease); ok {
		calls["CheckLease(lease 0)"] = func() { _ = s.CheckLease(ctx, 0) }
	}
	if r, ok := zero.(driver.RateLimiter); ok {
		calls["TakeStart(n 0)"] = func() { _, _, _ = r.TakeStart(ctx, 0, 0) }
	}
	if r, ok := zero.(driver.ReceiveStarter); ok {
		calls["ReceiveStart(lease 0)"] = func() { _ = r.ReceiveStart(ctx, 0, d) }
	}
}

// panicOf calls f and returns what it panicked with, as text ("" if it returned).
func panicOf(f func()) (p string) {
	defer func() {
		if r := recover(); r != nil {
			p = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}
