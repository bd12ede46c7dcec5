package scope_test

import (
	"context"
	"testing"

	"github.com/corral-go/corral/scope"
)

// The documented "synchronizes before" rules, checked by the race detector: each task writes
// a plain variable, read without other synchronization after the call that promises to order
// it (run with -race).
func TestTaskReturnSynchronizesBeforeRunAndHandleWait(t *testing.T) {
	for _, limit := range []int{0, 3} {
		var wrote [16]int
		var side int
		err := scope.Run(context.Background(), func(s *scope.Scope) error {
			for i := range wrote {
				s.Go(func(context.Context) error { wrote[i] = i + 1; return nil })
			}
			h := scope.Spawn(s, func(context.Context) (int, error) { side = 5; return 2, nil })
			if v, err := h.Wait(context.Background()); v != 2 || err != nil || side != 5 {
				t.Errorf("Wait = %d, %v with side %d; want 2, nil, 5", v, err, side)
			}
			return nil
		}, scope.WithLimit(limit))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range wrote {
			if v != i+1 {
				t.Fatalf("limit %d: task %d wrote %d; want %d", limit, i, v, i+1)
			}
		}
	}
}
