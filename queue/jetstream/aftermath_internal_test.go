package jetstream

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Close's ctx bounds its wait for the aftermath: when ctx ends first, the work not started is
// dropped and the work running is cancelled, so that none of it runs on for a call timeout
// after Close returned, and later work runs in its caller.
func TestCloseCancelsAftermath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &Backend{o: options{callTimeout: time.Hour}}
		var started, ended atomic.Int32
		const queued = aftermathWorkers + 6
		for range queued {
			if !b.after.add(b, func(ctx context.Context) {
				started.Add(1)
				<-ctx.Done()
				ended.Add(1)
			}) {
				t.Fatal("add before close = false, want the work queued")
			}
		}
		synctest.Wait()
		if n := started.Load(); n != aftermathWorkers {
			t.Fatalf("%d pieces of work started before close, want %d", n, aftermathWorkers)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		t0 := time.Now()
		b.after.close(ctx, b.confirmDrops)
		if d := time.Since(t0); d != time.Second {
			t.Errorf("close returned after %v, want 1s (its ctx)", d)
		}
		synctest.Wait()
		if s, e := started.Load(), ended.Load(); s != aftermathWorkers || e != aftermathWorkers {
			t.Errorf("after close: %d started, %d ended; want %d and %d (the rest dropped)", s, e, aftermathWorkers, aftermathWorkers)
		}
		if err := b.after.wait(context.Background()); err != nil {
			t.Errorf("wait after the work ended: %v", err)
		}
		if b.after.add(b, func(context.Context) {}) {
			t.Error("add after close = true, want the work left to its caller")
		}
	})
}

// wait (Delete's first step) waits for the work that Close cancelled until it ends, or
// returns the cause of its own ctx.
func TestWaitOutlastsClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &Backend{o: options{callTimeout: time.Hour}}
		release := make(chan struct{})
		var ended atomic.Bool
		b.after.add(b, func(ctx context.Context) {
			<-ctx.Done()
			<-release // a request that returns late
			ended.Store(true)
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		b.after.close(ctx, b.confirmDrops)

		cause := errors.New("gave up")
		wctx, wcancel := context.WithCancelCause(context.Background())
		wcancel(cause)
		if err := b.after.wait(wctx); !errors.Is(err, cause) {
			t.Errorf("wait with an ended ctx = %v, want its cause", err)
		}

		waited := make(chan error)
		go func() { waited <- b.after.wait(context.Background()) }()
		time.Sleep(time.Minute) // the bubble's clock: a minute passes, and the work still runs
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("wait returned %v while the work ran", err)
		default:
		}
		close(release)
		if err := <-waited; err != nil || !ended.Load() {
			t.Errorf("wait = %v, work ended %v; want nil, true", err, ended.Load())
		}
	})
}

// A later Close waits for the requests that the first Close cancelled, so that
// the caller who owns the Backend can wait for every goroutine it started.
func TestLaterCloseWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &Backend{js: closedJetStream{}, o: options{callTimeout: time.Hour}}
		release := make(chan struct{})
		b.after.add(b, func(ctx context.Context) {
			<-ctx.Done()
			<-release // a request that returns late
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("first Close = %v, want its ctx's deadline", err)
		}
		cause := errors.New("gave up")
		cctx, ccancel := context.WithCancelCause(context.Background())
		ccancel(cause)
		if err := b.Close(cctx); !errors.Is(err, cause) {
			t.Errorf("later Close with an ended ctx = %v, want its cause", err)
		}
		closed := make(chan error)
		go func() { closed <- b.Close(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("later Close returned %v while a cancelled request ran", err)
		default:
		}
		close(release)
		if err := <-closed; err != nil {
			t.Errorf("later Close = %v, want nil", err)
		}
	})
}

// closedJetStream stands for the JetStream of a Backend whose Close is tested
// without a server: Close calls none of its methods.
type closedJetStream struct{ natsjs.JetStream }

// close waits for a publish that send is making, and then confirms the publishes made (once),
// and only if one was made; send after close publishes nothing.
func TestCloseConfirmsSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, sent := range []bool{true, false} {
			b := &Backend{o: options{callTimeout: time.Hour}}
			release := make(chan struct{})
			go b.after.send(func() bool { <-release; return sent })
			synctest.Wait()
			var confirms atomic.Int32
			closed := make(chan struct{})
			go func() {
				defer close(closed)
				b.after.close(context.Background(), func(context.Context) error {
					confirms.Add(1)
					return nil
				})
			}()
			synctest.Wait()
			select {
			case <-closed:
				t.Fatalf("sent %v: close returned while a publish ran", sent)
			default:
			}
			close(release)
			<-closed
			want := int32(0)
			if sent {
				want = 1
			}
			if n := confirms.Load(); n != want {
				t.Errorf("sent %v: %d confirms, want %d", sent, n, want)
			}
			if b.after.send(func() bool { t.Error("publish after close"); return true }) {
				t.Errorf("sent %v: send after close = true, want false", sent)
			}
		}
	})
}
