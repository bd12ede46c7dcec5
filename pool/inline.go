package pool

import (
	"github.com/corral-go/corral/internal/panics"
)

// runContained runs t for its caller (a submitter under CallerRuns, Group.Go or Group.Wait),
// which waits for it, on a helper goroutine: a runtime.Goexit in t ends the helper, not the
// caller, and t then fails with ErrGoexit like a worker's task. t was already counted as
// started and in Pool.inline.
func (p *Pool) runContained(t task) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.labelled()
		p.runInline(t)
	}()
	<-done
}

// runInline runs t in the calling goroutine. t was already counted as started and in
// Pool.inline.
func (p *Pool) runInline(t task) {
	var res error
	start := p.clockFor(&t)
	ctx := p.life
	var d derived
	if !isBackground(t.ctx) {
		d = p.derive(t.ctx)
		ctx = d.ctx
	}
	// Deferred first, so that it runs even if Hooks.OnError calls runtime.Goexit.
	defer func() {
		p.mu.Lock()
		p.inline--
		p.maybeDoneLocked()
		p.mu.Unlock()
	}()
	var c panics.Catcher
	defer func() {
		if d.ctx != nil {
			d.release()
		}
		var err error
		panicked := false
		switch {
		case c.Panic != nil:
			err, panicked = panics.PoolError(c.Panic.Value, c.Panic.Stack), true
		case c.Goexit:
			err = ErrGoexit
		default:
			err = res
		}
		now := p.clockFor(&t)
		p.mu.Lock()
		p.finishedLocked(err, panicked)
		if t.enq != 0 {
			p.timesLocked().record(t.enq, start, now)
		}
		p.mu.Unlock()
		p.finish(&t, err, now-start)
	}()
	defer c.Recover()
	res = t.fn(ctx)
	c.Returned()
}
