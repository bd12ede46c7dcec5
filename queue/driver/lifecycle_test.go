package driver_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

const (
	notOpened     = "kit: backend not opened"
	alreadyOpened = "kit: backend already opened"
)

// errText is err's text, or "<nil>".
func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// One rule for a call on a backend that is not open: not opened (a
// mistake, named by the backend) until an Open succeeds, ErrClosed once
// closed, else none; a failed Open leaves it not opened, and a second Open
// is a mistake.
func TestLifecycle(t *testing.T) {
	var l driver.Lifecycle
	l.Init()
	if got := errText(l.Check(testCall)); got != notOpened {
		t.Fatalf("Check before Open = %s, want %s", got, notOpened)
	}
	runs := 0
	if err := l.Open(testCall, func() error { runs++; return errBroker }); err != errBroker {
		t.Fatalf("Open whose open failed = %v, want %v", err, errBroker)
	}
	if got := errText(l.Check(testCall)); got != notOpened {
		t.Fatalf("Check after a failed Open = %s, want %s", got, notOpened)
	}
	if err := l.Open(testCall, func() error { runs++; return nil }); err != nil {
		t.Fatalf("Open = %v, want nil", err)
	}
	if err := l.Check(testCall); err != nil {
		t.Fatalf("Check after Open = %v, want nil", err)
	}
	if got := errText(l.Open(testCall, func() error { runs++; return nil })); got != alreadyOpened {
		t.Fatalf("second Open = %s, want %s", got, alreadyOpened)
	}
	if runs != 2 {
		t.Fatalf("open ran %d times, want 2 (not for the second Open)", runs)
	}
	select {
	case <-l.Closing():
		t.Fatal("Closing closed before Close")
	default:
	}
	if first, opened := l.Close(); !first || !opened {
		t.Fatalf("Close = %v, %v; want true, true", first, opened)
	}
	if first, opened := l.Close(); first || !opened {
		t.Fatalf("second Close = %v, %v; want false, true", first, opened)
	}
	<-l.Closing() // never returns if Close did not close it
	if err := l.Check(testCall); err != driver.ErrClosed {
		t.Fatalf("Check after Close = %v, want ErrClosed", err)
	}
	if got := errText(l.Open(testCall, func() error { runs++; return nil })); got != alreadyOpened {
		t.Fatalf("Open after Close = %s, want %s", got, alreadyOpened)
	}
}

// A backend closed before it opened: Check says not opened, Open refuses
// without running open.
func TestLifecycleClosedBeforeOpen(t *testing.T) {
	var l driver.Lifecycle
	l.Init()
	closing := l.Closing()
	if first, opened := l.Close(); !first || opened {
		t.Fatalf("Close = %v, %v; want true, false", first, opened)
	}
	<-closing
	if got := errText(l.Check(testCall)); got != notOpened {
		t.Fatalf("Check = %s, want %s", got, notOpened)
	}
	if err := l.Open(testCall, func() error { t.Error("open ran after Close"); return nil }); err != driver.ErrClosed {
		t.Fatalf("Open = %v, want ErrClosed", err)
	}
}

// Open runs one open at a time, and Check does not wait for it. What open
// wrote is seen by the call whose Check returned nil (the race detector
// checks the order).
func TestLifecycleOpenRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l driver.Lifecycle
		l.Init()
		release := make(chan struct{})
		var set int
		first := make(chan error, 1)
		go func() {
			first <- l.Open(testCall, func() error { <-release; set = 1; return nil })
		}()
		synctest.Wait()
		second := make(chan error, 1)
		// Started while the first open runs; whether it reaches Open's lock before the first
		// returns or after, it must not run its open (a mutex wait is not one synctest.Wait
		// can wait for).
		go func() {
			second <- l.Open(testCall, func() error { t.Error("second open ran"); return nil })
		}()
		if got := errText(l.Check(testCall)); got != notOpened {
			t.Fatalf("Check while open runs = %s, want %s", got, notOpened)
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatalf("Open = %v", err)
		}
		if got := errText(<-second); got != alreadyOpened {
			t.Fatalf("second Open = %s, want %s", got, alreadyOpened)
		}
		seen := make(chan int)
		go func() {
			if l.Check(testCall) == nil {
				seen <- set
			}
			close(seen)
		}()
		if v := <-seen; v != 1 {
			t.Fatalf("a call after Check saw %d, want 1", v)
		}
	})
}

// Close does not wait for a running open, and makes its Open fail with
// ErrClosed.
func TestLifecycleCloseWhileOpening(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l driver.Lifecycle
		l.Init()
		release := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- l.Open(testCall, func() error { <-release; return nil }) }()
		synctest.Wait()
		if first, opened := l.Close(); !first || opened {
			t.Fatalf("Close while open runs = %v, %v; want true, false", first, opened)
		}
		close(release)
		if err := <-done; !errors.Is(err, driver.ErrClosed) {
			t.Fatalf("Open closed meanwhile = %v, want ErrClosed", err)
		}
		if got := errText(l.Check(testCall)); got != notOpened {
			t.Fatalf("Check = %s, want %s", got, notOpened)
		}
	})
}

// Begin is Check, then the call's context: Check's error with a cancel
// func that may be deferred, else a context that ends after the call's
// timeout with an error that Fail reads as the call's own deadline.
func TestLifecycleBegin(t *testing.T) {
	var l driver.Lifecycle
	l.Init()
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "caller")
	ctx, cancel, err := l.Begin(parent, testCall, time.Hour)
	cancel() // never nil
	if got := errText(err); got != notOpened {
		t.Fatalf("Begin before Open = %s, want %s", got, notOpened)
	}
	if ctx != parent {
		t.Fatalf("the context of a Begin that failed is not the caller's")
	}
	if err := l.Open(testCall, func() error { return nil }); err != nil {
		t.Fatalf("Open = %v", err)
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel, err := l.Begin(parent, testCall, time.Second)
		defer cancel()
		if err != nil {
			t.Fatalf("Begin after Open = %v, want nil", err)
		}
		if ctx.Value(key{}) != "caller" {
			t.Fatal("the call's context does not come from the caller's")
		}
		start := time.Now()
		<-ctx.Done()
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("the call's context ended after %v, want 1s", waited)
		}
		const want = "kit: op: queue: backend unavailable: kit: no answer within the call timeout: context deadline exceeded"
		if err := testCall.Fail(ctx, "op", ctx.Err()); errText(err) != want {
			t.Fatalf("Fail at the call's deadline = %v, want %s", err, want)
		}
	})
	cctx, cancelParent := context.WithCancel(parent)
	ctx, cancel, err = l.Begin(cctx, testCall, time.Hour)
	if err != nil {
		t.Fatalf("Begin after Open = %v, want nil", err)
	}
	cancelParent() // ends the contexts derived from it before it returns
	select {
	case <-ctx.Done():
	default:
		t.Fatal("the call's context did not end with the caller's")
	}
	cancel()
	l.Close()
	_, cancel, err = l.Begin(context.Background(), testCall, time.Hour)
	cancel()
	if err != driver.ErrClosed {
		t.Fatalf("Begin after Close = %v, want ErrClosed", err)
	}
}

// Made panics, with the backend's name and what to use, only when the
// Backend was not made by its New.
func TestCallMade(t *testing.T) {
	testCall.Made(true)
	defer func() {
		const want = "kit: zero Backend: use kit.New"
		if got := recover(); got != want {
			t.Fatalf("Made(false) panicked with %v, want %q", got, want)
		}
	}()
	testCall.Made(false)
	t.Fatal("Made(false) returned")
}

// The Lifecycle of a zero Backend (not marked by Init) panics in Open,
// Check and Begin, naming the backend and what to use; Close and Closing
// work.
func TestLifecycleZero(t *testing.T) {
	const want = "kit: zero Backend: use kit.New"
	var l driver.Lifecycle
	for name, f := range map[string]func(){
		"Open":  func() { _ = l.Open(testCall, func() error { t.Error("open ran"); return nil }) },
		"Check": func() { _ = l.Check(testCall) },
		"Begin": func() { _, _, _ = l.Begin(context.Background(), testCall, time.Second) },
	} {
		func() {
			defer func() {
				if got := recover(); got != want {
					t.Errorf("%s panicked with %v, want %q", name, got, want)
				}
			}()
			f()
		}()
	}
	if first, opened := l.Close(); !first || opened {
		t.Fatalf("Close = %v, %v; want true, false", first, opened)
	}
	select {
	case <-l.Closing():
	default:
		t.Fatal("Closing not closed after Close")
	}
}
