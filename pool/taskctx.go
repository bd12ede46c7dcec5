package pool

import (
	"context"
	"fmt"
	"reflect"
)

// releaseCtx cancels the worker's cached task contexts, except those that the incoming task's
// context descends from (keep), which it keeps in w.held: cancelling them would end it.
// keep == nil keeps none.
func (w *worker) releaseCtx(keep *ancestry) {
	if w.cur.ctx == nil {
		return
	}
	w.held = append(w.held, w.cur)
	w.key, w.cur = nil, derived{}
	for n := len(w.held); n > 0; n-- {
		d := w.held[n-1]
		if keep != nil && keep.of(d.ctx) {
			break // d and those below it (its ancestors) are parent's ancestors
		}
		d.release()
		w.held[n-1] = derived{}
		w.held = w.held[:n-1]
	}
}

// isBackground reports whether ctx is context.Background() or context.TODO(): a context that
// never ends and has no values. Their types say so (every value of each is the same), so no
// value compare (runtime.ifaceeq) is needed.
func isBackground(ctx context.Context) bool {
	t := reflect.TypeOf(ctx)
	return t == backgroundType || t == todoType
}

// The types of context.Background() and context.TODO().
var (
	backgroundType = reflect.TypeOf(context.Background())
	todoType       = reflect.TypeOf(context.TODO())
)

// taskCtx returns the context a task submitted with parent runs with: parent's values and
// cancellation, plus the pool's lifetime. The last derived context is cached per worker.
// The caller runs tasks of a background parent (isBackground) with p.life itself.
func (w *worker) taskCtx(p *Pool, parent context.Context) context.Context {
	if w.key != nil && w.key == parent { // key is a pointer, so == cannot panic
		return w.cur.ctx
	}
	w.releaseCtx(&ancestry{parent})
	if parent.Value(poolQuery{p}) != nil {
		// parent descends from a context this pool derived: it already ends with the pool's
		// lifetime, and a worker that cached it keeps it (releaseCtx) while tasks of its
		// descendants come.
		return parent
	}
	w.cur = p.derive(parent)
	// Only a pointer is cached: a value of a comparable type (a struct) may hold an
	// uncomparable value in an interface field, and comparing two such values panics.
	if reflect.TypeOf(parent).Kind() == reflect.Pointer {
		w.key = parent
	}
	return w.cur.ctx
}

// derived is a task context derived by the pool, with what releases it.
type derived struct {
	ctx    *taskContext
	cancel context.CancelCauseFunc
	stop   func() bool // stops the link to the pool's lifetime
}

// derive returns a context with parent's values that ends when parent ends or the pool's
// lifetime ends (with the pool's cause).
func (p *Pool) derive(parent context.Context) derived {
	ctx, cancel := context.WithCancelCause(parent)
	life := p.life
	stop := context.AfterFunc(life, func() { cancel(context.Cause(life)) })
	return derived{ctx: &taskContext{ctx, p}, cancel: cancel, stop: stop}
}

// release cancels d's context, with context.Canceled as the cause.
func (d derived) release() {
	d.stop()
	d.cancel(context.Canceled)
}

// A taskContext is a context derived by the pool for tasks. It answers an ancestorQuery for
// itself, so that a worker can tell whether an incoming task's context descends from one it
// cached (a task's follow-up, submitted with the task's own context) before cancelling it.
type taskContext struct {
	context.Context
	p *Pool
}

// poolQuery is a Value key answered by the task contexts of one pool.
type poolQuery struct{ p *Pool }

// ancestry asks whether a context descends from a taskContext.
type ancestry struct{ ctx context.Context }

// of reports whether a.ctx is c or descends from it.
func (a *ancestry) of(c *taskContext) bool { return a.ctx.Value(ancestorQuery{c}) != nil }

// ancestorQuery is a Value key: ctx.Value(ancestorQuery{c}) is non-nil if ctx is c or
// descends from it (through contexts that pass unknown keys to their parent).
type ancestorQuery struct{ c *taskContext }

func (c *taskContext) Value(key any) any {
	switch q := key.(type) {
	case ancestorQuery:
		if q.c == c {
			return c
		}
	case poolQuery:
		if q.p == c.p {
			return c
		}
	}
	return c.Context.Value(key)
}

func (c *taskContext) String() string { return fmt.Sprint(c.Context) }
