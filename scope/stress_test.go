package scope_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-go/corral/scope"
)

type action int

const (
	actOK action = iota
	actErr
	actPanic
	actGoexit
	actBlock // waits until the next task starts, or the scope is cancelled
)

type outcome int32

const (
	outNone outcome = iota // never ran
	outOK
	outErr
	outPanic
	outGoexit
	outEcho // returned ctx.Err() after the scope was cancelled
)

// TestStress runs 10,000 tasks under Limit(8) with random errors, panics, Goexits and tasks
// that block on channels (no sleeps), then checks exactly: the limit was never exceeded, every
// task either ran or was skipped, and Run reported exactly the failures the tasks produced,
// root cause first. Run it with -race -count=50.
func TestStress(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	modes := []struct {
		name      string
		opts      []scope.Option
		failEvery int // about one task in failEvery fails
		reraise   bool
	}{
		{"failfast-returnpanics", []scope.Option{scope.WithPanicsAsErrors()}, 1500, false},
		{"failfast-reraise", nil, 1500, true},
		{"supervise", []scope.Option{scope.WithPanicsAsErrors(), scope.WithJoiner(scope.Supervise)}, 15, false},
	}
	for mi, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			stress(t, rand.New(rand.NewPCG(seed, uint64(mi))), m.opts, m.failEvery, m.reraise)
		})
	}
}

func stress(t *testing.T, rng *rand.Rand, opts []scope.Option, failEvery int, reraise bool) {
	const n, limit = 10_000, 8
	acts := make([]action, n)
	for i := range acts {
		switch r := rng.IntN(failEvery * 4); {
		case r == 0:
			acts[i] = actErr
		case r == 1:
			acts[i] = actPanic
		case r == 2:
			acts[i] = actGoexit
		case r < failEvery && i+1 < n && (i == 0 || acts[i-1] != actBlock):
			acts[i] = actBlock
		default:
			acts[i] = actOK
		}
	}
	errs := make([]error, n)
	release := make([]chan struct{}, n)
	for i := range n {
		errs[i] = fmt.Errorf("task %d failed", i)
		release[i] = make(chan struct{})
	}
	outcomes := make([]atomic.Int32, n)
	var g gauge
	var echoCause atomic.Pointer[error]
	var sc *scope.Scope

	v, err := func() (v any, err error) {
		defer func() { v = recover() }()
		err = scope.Run(context.Background(), func(s *scope.Scope) error {
			sc = s
			for i := range n {
				s.Go(func(ctx context.Context) error {
					g.enter()
					defer g.leave()
					if i > 0 {
						close(release[i-1])
					}
					switch acts[i] {
					case actErr:
						outcomes[i].Store(int32(outErr))
						return errs[i]
					case actPanic:
						outcomes[i].Store(int32(outPanic))
						panic(i)
					case actGoexit:
						outcomes[i].Store(int32(outGoexit))
						runtime.Goexit()
					case actBlock:
						select {
						case <-release[i]:
						case <-ctx.Done():
							cause := context.Cause(ctx)
							echoCause.CompareAndSwap(nil, &cause)
							if i%2 == 0 { // a real error after the cancel: reported
								outcomes[i].Store(int32(outErr))
								return errs[i]
							}
							outcomes[i].Store(int32(outEcho))
							return ctx.Err()
						}
					}
					outcomes[i].Store(int32(outOK))
					return nil
				})
			}
			return nil
		}, append(opts, scope.WithLimit(limit))...)
		return nil, err
	}()

	skipped := sc.Skipped() // final once Run has returned, or panicked
	if m := g.max.Load(); m > limit {
		t.Fatalf("saw %d tasks running at once; want <= %d", m, limit)
	}
	ran := 0
	want := map[int]outcome{}
	for i := range n {
		o := outcome(outcomes[i].Load())
		if o != outNone {
			ran++
		}
		switch o {
		case outErr, outPanic, outGoexit:
			want[i] = o
		}
	}
	if ran+skipped != n {
		t.Fatalf("ran %d + skipped %d != %d tasks", ran, skipped, n)
	}

	// What Run reported.
	var reported []error
	if reraise && v != nil {
		pe, ok := v.(*scope.PanicError)
		if !ok {
			t.Fatalf("Run panicked with %T %v", v, v)
		}
		reported = append([]error{pe}, pe.Unwrap()...)
	} else if v != nil {
		t.Fatalf("Run panicked: %v", v)
	} else {
		reported = unwrapAll(err)
	}
	if reraise && v == nil {
		for i, o := range want {
			if o == outPanic {
				t.Fatalf("task %d panicked but Run did not re-panic", i)
			}
		}
	}
	got := map[int]outcome{}
	for _, e := range reported {
		var te *scope.TaskError
		var pe *scope.PanicError
		switch {
		case errors.As(e, &pe) && e == error(pe):
			equal(t, any(pe.Index), pe.Value, "panic value of task %d", pe.Index)
			got[pe.Index] = outPanic
		case errors.As(e, &te) && errors.Is(te, scope.ErrGoexit):
			got[te.Index] = outGoexit
		case errors.As(e, &te):
			same(t, errs[te.Index], te.Err, "error of task %d", te.Index)
			got[te.Index] = outErr
		default:
			t.Fatalf("unexpected reported error %v", e)
		}
	}
	if len(got) != len(reported) {
		t.Fatalf("%d failures reported for %d tasks: duplicates", len(reported), len(got))
	}
	equal(t, want, got, "the exact failure set")
	if c := echoCause.Load(); c != nil && len(reported) > 0 && v == nil {
		same(t, reported[0], *c, "root cause first: the cause the cancelled tasks saw")
	} else if c != nil && v != nil {
		// A re-raised panic is the first panic; an earlier root cause that was an error is
		// among what it carries.
		found := false
		for _, e := range reported {
			found = found || e == *c
		}
		isTrue(t, found, "the cause the cancelled tasks saw, %v, is not reported", *c)
	}
	t.Logf("ran %d, skipped %d, failures %d", ran, skipped, len(reported))
}
