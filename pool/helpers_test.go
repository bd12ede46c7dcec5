package pool_test

import (
	"context"
	"sync"
	"testing"

	"github.com/corral-go/corral/pool"
)

var bg = context.Background()

// waitFor returns a task that blocks until gate is closed.
func waitFor(gate <-chan struct{}) func(context.Context) error {
	return func(context.Context) error { <-gate; return nil }
}

// recorder records the order in which tasks ran.
type recorder struct {
	mu  sync.Mutex
	ran []int
}

func (r *recorder) task(i int) func(context.Context) error {
	return func(context.Context) error {
		r.mu.Lock()
		r.ran = append(r.ran, i)
		r.mu.Unlock()
		return nil
	}
}

func (r *recorder) got() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.ran...)
}

// drop is a drop-hook call.
type drop struct {
	reason pool.Reason
	key    any // value of ctxKey in the task's context
}

type ctxKey struct{}

// drops collects drop-hook calls.
type drops struct {
	mu   sync.Mutex
	list []drop
}

func (d *drops) hook() pool.Option {
	return onDrop(func(ctx context.Context, r pool.Reason) {
		d.mu.Lock()
		d.list = append(d.list, drop{reason: r, key: ctx.Value(ctxKey{})})
		d.mu.Unlock()
	})
}

func (d *drops) got() []drop {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]drop(nil), d.list...)
}

func mustClose(t *testing.T, p *pool.Pool) {
	t.Helper()
	if err := p.Close(bg); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func mustSubmit(t *testing.T, p *pool.Pool, ctx context.Context, fn func(context.Context) error) {
	t.Helper()
	if err := p.Submit(ctx, fn); err != nil {
		t.Fatalf("Submit: %v", err)
	}
}

// checkIdentity asserts the accounting identity of Stats.
func checkIdentity(t *testing.T, s pool.Stats) {
	t.Helper()
	sum := s.Completed + s.Failed + s.Panicked + s.Rejected + s.Dropped.Total() + s.Skipped +
		uint64(s.Running) + uint64(s.Queued) + uint64(s.Waiting)
	if sum != s.Submitted {
		t.Errorf("accounting: submitted %d, outcomes sum to %d: %+v", s.Submitted, sum, s)
	}
	if started := s.Completed + s.Failed + s.Panicked + uint64(s.Running); started != s.Started {
		t.Errorf("accounting: started %d, finished+running %d: %+v", s.Started, started, s)
	}
}

// onDrop and onError set one hook, for tests that need only that one.
func onDrop(f func(ctx context.Context, r pool.Reason)) pool.Option {
	return pool.WithHooks(pool.Hooks{OnDrop: func(ctx context.Context, e pool.DropEvent) { f(ctx, e.Reason) }})
}

func onError(f func(ctx context.Context, err error)) pool.Option {
	return pool.WithHooks(pool.Hooks{OnError: func(ctx context.Context, e pool.ErrorEvent) { f(ctx, e.Err) }})
}
