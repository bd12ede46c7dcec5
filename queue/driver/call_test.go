package driver_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

var (
	errStop   = errors.New("stop")         // the caller's cause
	errGone   = errors.New("conn refused") // an error the backend calls unreachable
	errBroker = errors.New("no such key")  // any other answer of the broker
	errGiveUp = errors.New("gave up")      // the cause of a receiver's abandon context
)

var testCall = driver.Call{Name: "kit", Unreachable: func(err error) bool { return errors.Is(err, errGone) }}

// One rule for a call that failed, whatever the backend: the caller's ctx
// ended (its cause, and ErrUnavailable whatever the error), the call's own
// deadline passed (ErrUnavailable and the error), the broker could not be
// reached (ErrUnavailable and the error), or any other error (that error
// only).
func TestCallFail(t *testing.T) {
	canceledWith := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	pastDeadline, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	type is struct{ unavailable, stop, gone, broker, canceled, deadline bool }
	for _, tc := range []struct {
		name   string
		caller context.Context
		call   time.Duration // the call's own deadline
		err    error
		want   is
		msg    string
	}{
		{"caller canceled with a cause, broker answered late", canceledWith(errStop), time.Hour, errBroker,
			is{unavailable: true, stop: true}, "kit: op: stop (queue: backend unavailable)"},
		{"caller canceled", canceledWith(nil), time.Hour, context.Canceled,
			is{unavailable: true, canceled: true}, "kit: op: context canceled (queue: backend unavailable)"},
		{"caller's deadline passed", pastDeadline, time.Hour, context.DeadlineExceeded,
			is{unavailable: true, deadline: true}, "kit: op: context deadline exceeded (queue: backend unavailable)"},
		{"call timeout", context.Background(), 0, context.DeadlineExceeded,
			is{unavailable: true, deadline: true},
			"kit: op: queue: backend unavailable: kit: no answer within the call timeout: context deadline exceeded"},
		{"call timeout, broker answered late", context.Background(), 0, errBroker,
			is{unavailable: true, broker: true},
			"kit: op: queue: backend unavailable: kit: no answer within the call timeout: no such key"},
		{"unreachable", context.Background(), time.Hour, errGone,
			is{unavailable: true, gone: true}, "kit: op: queue: backend unavailable: conn refused"},
		{"unreachable, wrapped", context.Background(), time.Hour, fmt.Errorf("dial: %w", errGone),
			is{unavailable: true, gone: true}, "kit: op: queue: backend unavailable: dial: conn refused"},
		{"other error", context.Background(), time.Hour, errBroker,
			is{broker: true}, "kit: op: no such key"},
	} {
		ctx, cancel := testCall.Context(tc.caller, tc.call)
		err := testCall.Fail(ctx, "op", tc.err)
		cancel()
		got := is{
			errors.Is(err, driver.ErrUnavailable), errors.Is(err, errStop), errors.Is(err, errGone),
			errors.Is(err, errBroker), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		}
		if got != tc.want || err.Error() != tc.msg {
			t.Errorf("%s: Fail = %q, matching %+v; want %q, matching %+v", tc.name, err, got, tc.msg, tc.want)
		}
	}
}

// A Call with no Unreachable predicate calls no error unreachable.
func TestCallFailNoPredicate(t *testing.T) {
	err := driver.Call{Name: "kit"}.Fail(context.Background(), "op", errGone)
	if errors.Is(err, driver.ErrUnavailable) || err.Error() != "kit: op: conn refused" {
		t.Errorf("Fail = %q, want kit: op: conn refused, not ErrUnavailable", err)
	}
}

// Sleep waits exactly d, or returns false as soon as ctx ends.
func TestCallSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !testCall.Sleep(context.Background(), 3*time.Second) || time.Since(start) != 3*time.Second {
			t.Errorf("Sleep(3s) returned after %v, want true after 3s", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		if testCall.Sleep(ctx, time.Hour) || time.Since(start) != time.Second {
			t.Errorf("Sleep(1h) with a 1s ctx returned after %v, want false after 1s", time.Since(start))
		}
	})
}

// Wait returns at the first of: the wake-up (woken), the timeout (not
// woken, no error, after exactly d), the backend's close (ErrClosed), the
// caller's ctx (its cause).
func TestCallWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		closed := make(chan struct{})
		close(closed)
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errStop)
		for _, tc := range []struct {
			name          string
			ctx           context.Context
			wake, closing <-chan struct{}
			woken         bool
			err           error
			after         time.Duration
		}{
			{"woken", context.Background(), closed, nil, true, nil, 0},
			{"timeout", context.Background(), nil, nil, false, nil, time.Second},
			{"closed", context.Background(), nil, closed, false, driver.ErrClosed, 0},
			{"ctx", ctx, nil, nil, false, errStop, 0},
		} {
			start := time.Now()
			woken, err := testCall.Wait(tc.ctx, tc.wake, tc.closing, time.Second)
			if woken != tc.woken || err != tc.err || time.Since(start) != tc.after {
				t.Errorf("%s: Wait = %v, %v after %v; want %v, %v after %v", tc.name, woken, err, time.Since(start), tc.woken, tc.err, tc.after)
			}
		}
	})
}

type key struct{}

// UntilDeadline's context keeps the caller's values, outlives a cancel of the caller's ctx
// (with a deadline or without), ends at its deadline with its cause, and, once the caller's
// ctx was cancelled, not at its deadline.
func TestCallUntilDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := context.WithValue(context.Background(), key{}, "v")
		for _, d := range []time.Duration{0, time.Second} {
			ctx, cancel := context.WithCancelCause(base)
			if d > 0 {
				var dcancel context.CancelFunc
				ctx, dcancel = context.WithDeadline(ctx, time.Now().Add(d))
				defer dcancel()
			}
			sctx, stop := testCall.UntilDeadline(ctx)
			defer stop()
			cancel(errStop)
			time.Sleep(2 * time.Second) // past the deadline, if any
			if err := sctx.Err(); err != nil || sctx.Value(key{}) != "v" {
				t.Fatalf("deadline %v, cancelled before it: Err %v, value %v; want nil, v", d, err, sctx.Value(key{}))
			}
		}

		dctx, dcancel := context.WithDeadlineCause(base, time.Now().Add(time.Second), errStop)
		defer dcancel()
		sctx, stop := testCall.UntilDeadline(dctx)
		defer stop()
		start := time.Now()
		<-sctx.Done()
		if took, cause := time.Since(start), context.Cause(sctx); took != time.Second || cause != errStop {
			t.Fatalf("at the caller's deadline: ended after %v with %v; want 1s, %v", took, cause, errStop)
		}
		late, stop := testCall.UntilDeadline(dctx)
		defer stop()
		if cause := context.Cause(late); cause != errStop {
			t.Fatalf("made after the caller's deadline: cause %v; want %v at once", cause, errStop)
		}
		gctx, stop := testCall.GiveBack(dctx)
		defer stop()
		time.Sleep(time.Hour)
		if err := gctx.Err(); err != nil || gctx.Value(key{}) != "v" {
			t.Fatalf("GiveBack after the caller's deadline: Err %v, value %v; want nil, v", err, gctx.Value(key{}))
		}
	})
}

// A call of a receiver that left, and its give-back, end when the abandon context the
// receiver's ctx carries ends, with its cause, whether the ctx is WithAbandon's copy itself,
// a context derived from it, or one with a deadline; those made after the abandon end at once.
func TestCallUntilAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := context.WithValue(context.Background(), key{}, "v")
		for _, kind := range []string{"copy", "derived", "deadline"} {
			abandon, giveUp := context.WithCancelCause(context.Background())
			ctx := driver.WithAbandon(base, abandon)
			switch kind {
			case "derived":
				ctx = context.WithValue(ctx, key{}, "v")
			case "deadline":
				var dcancel context.CancelFunc
				ctx, dcancel = context.WithDeadline(ctx, time.Now().Add(time.Hour))
				defer dcancel()
			}
			sctx, stop := testCall.UntilDeadline(ctx)
			gctx, gstop := testCall.GiveBack(ctx)
			time.Sleep(time.Minute)
			for _, c := range []context.Context{sctx, gctx} {
				if err := c.Err(); err != nil || c.Value(key{}) != "v" {
					t.Fatalf("%s, not abandoned: Err %v, value %v; want nil, v", kind, err, c.Value(key{}))
				}
			}
			giveUp(errGiveUp)
			synctest.Wait()
			late, lstop := testCall.UntilDeadline(ctx)
			lateBack, lgstop := testCall.GiveBack(ctx)
			for i, c := range []context.Context{sctx, gctx, late, lateBack} {
				if cause := context.Cause(c); cause != errGiveUp {
					t.Fatalf("%s, abandoned: context %d: cause %v; want %v", kind, i, cause, errGiveUp)
				}
			}
			stop()
			gstop()
			lstop()
			lgstop()
		}
	})
}

// A receiver's usual call, UntilDeadline of the very context WithAbandon returned, with no
// deadline (a consumer's, unless the ctx given to Consume has one), sets nothing up: no
// allocation, no watcher.
func TestUntilDeadlineOfReceiverAllocatesNothing(t *testing.T) {
	abandon, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := driver.WithAbandon(context.Background(), abandon)
	if n := testing.AllocsPerRun(100, func() {
		_, stop := testCall.UntilDeadline(ctx)
		stop()
	}); n != 0 {
		t.Errorf("UntilDeadline of a receiver's ctx: %v allocations; want 0", n)
	}
}
