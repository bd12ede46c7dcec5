package pool_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/pool"
)

// Idle workers exit after the idle timeout (exactly) and start again on demand.
func TestIdleWorkersExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(4, 8, pool.WithIdleTimeout(10*time.Second))
		gate := make(chan struct{})
		for range 3 {
			mustSubmit(t, p, bg, waitFor(gate))
		}
		synctest.Wait()
		if got := p.Stats().Workers; got != 3 {
			t.Fatalf("Workers = %d; want 3", got)
		}
		close(gate)
		synctest.Wait()
		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		if got := p.Stats().Workers; got != 3 {
			t.Fatalf("just before the idle timeout: Workers = %d; want 3", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := p.Stats().Workers; got != 0 {
			t.Fatalf("after the idle timeout: Workers = %d; want 0", got)
		}
		// On demand again.
		gate2 := make(chan struct{})
		mustSubmit(t, p, bg, waitFor(gate2))
		mustSubmit(t, p, bg, waitFor(gate2))
		synctest.Wait()
		if got := p.Stats().Workers; got != 2 {
			t.Fatalf("after new work: Workers = %d; want 2", got)
		}
		close(gate2)
		mustClose(t, p)
		if got := p.Stats().Workers; got != 0 {
			t.Fatalf("after Close: Workers = %d; want 0", got)
		}
	})
}

// A worker that keeps getting work does not time out, and its idle time restarts each time.
func TestIdleTimeoutRestartsWithWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(1, 1, pool.WithIdleTimeout(10*time.Second))
		for range 5 {
			mustSubmit(t, p, bg, func(ctxT) error { return nil })
			synctest.Wait()
			time.Sleep(6 * time.Second)
			synctest.Wait()
			if got := p.Stats().Workers; got != 1 {
				t.Fatalf("Workers = %d; want 1", got)
			}
		}
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if got := p.Stats().Workers; got != 0 {
			t.Fatalf("Workers = %d; want 0", got)
		}
		mustClose(t, p)
	})
}

// With an idle timeout of 0, a worker exits as soon as the queue is empty.
func TestIdleTimeoutZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pool.New(2, 1, pool.WithIdleTimeout(0))
		mustSubmit(t, p, bg, func(ctxT) error { return nil })
		synctest.Wait()
		if got := p.Stats().Workers; got != 0 {
			t.Fatalf("Workers = %d; want 0", got)
		}
		mustClose(t, p)
	})
}

type ctxT = context.Context
