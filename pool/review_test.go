package pool_test

import (
	"context"
	"testing"

	"github.com/corral-go/corral/pool"
)

// sliceCtx is a context of an uncomparable type; wrapCtx is comparable but may hold one.
type sliceCtx struct {
	context.Context
	tags []string
}

type wrapCtx struct{ context.Context }

// A context whose type is comparable but whose dynamic value is not must not crash the worker
// that caches task contexts (comparing two such values panics).
func TestTaskContextUncomparableValue(t *testing.T) {
	p := pool.New(1, 4)
	defer mustClose(t, p)
	for _, c := range []context.Context{
		wrapCtx{sliceCtx{bg, []string{"a"}}},
		wrapCtx{sliceCtx{bg, []string{"b"}}},
		sliceCtx{bg, []string{"c"}},
		sliceCtx{bg, []string{"d"}},
	} {
		h, _ := pool.Call(c, p, func(context.Context) (int, error) { return 1, nil })
		if v, err := h.Wait(bg); v != 1 || err != nil {
			t.Fatalf("task = %v, %v", v, err)
		}
	}
}
