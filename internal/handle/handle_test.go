package handle_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/handle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestResolvedCellReturnsValueAndError(t *testing.T) {
	var c handle.Cell[int]
	c.Init()
	if c.Ready() {
		t.Fatal("Ready before Resolve")
	}
	boom := errors.New("boom")
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Set(7)
		c.Resolve(boom)
	}()
	v, err := c.Wait(context.Background(), "zero")
	<-done
	if v != 7 || err != boom {
		t.Fatalf("Wait = %d, %v; want 7, boom", v, err)
	}
	if !c.Ready() {
		t.Fatal("not Ready after Wait returned the result")
	}
	if v, err := c.Result(); v != 7 || err != boom {
		t.Fatalf("Result = %d, %v; want 7, boom", v, err)
	}
	select {
	case <-c.Done("zero"):
	default:
		t.Fatal("Done not closed after Resolve")
	}
}

func TestWaitGivesUpWithTheCause(t *testing.T) {
	var c handle.Cell[string]
	c.Init()
	cause := errors.New("gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if v, err := c.Wait(ctx, "zero"); v != "" || err != cause {
		t.Fatalf("Wait = %q, %v; want \"\", %v", v, err, cause)
	}
	c.Set("late")
	c.Resolve(nil)
	// A result that is ready wins over a ctx that has ended.
	if v, err := c.Wait(ctx, "zero"); v != "late" || err != nil {
		t.Fatalf("Wait after Resolve = %q, %v; want late, nil", v, err)
	}
}

func TestZeroCellPanicsWithTheGivenMessage(t *testing.T) {
	for name, call := range map[string]func(c *handle.Cell[int]){
		"Wait": func(c *handle.Cell[int]) { _, _ = c.Wait(context.Background(), "pkg: zero Handle") },
		"Done": func(c *handle.Cell[int]) { c.Done("pkg: zero Handle") },
	} {
		func() {
			defer func() {
				if r := recover(); r != "pkg: zero Handle" {
					t.Errorf("%s on a zero Cell panicked with %v; want %q", name, r, "pkg: zero Handle")
				}
			}()
			var c handle.Cell[int]
			call(&c)
		}()
	}
}
