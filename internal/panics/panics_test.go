package panics_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/panics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// guard runs f on a goroutine of its own, as a task runs, and returns its Catcher.
func guard(f func()) *panics.Catcher {
	c := new(panics.Catcher)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.Recover()
		f()
		c.Returned()
	}()
	<-done
	return c
}

func explode() { panic(errors.New("boom")) }

func TestCatcher(t *testing.T) {
	if c := guard(func() {}); c.Panic != nil || c.Goexit {
		t.Fatalf("normal return: %+v", c)
	}
	c := guard(explode)
	if c.Panic == nil || c.Goexit {
		t.Fatalf("panic: %+v", c)
	}
	if err, _ := c.Panic.Value.(error); err == nil || err.Error() != "boom" {
		t.Fatalf("value %v", c.Panic.Value)
	}
	if !strings.Contains(string(c.Panic.Stack), "panics_test.explode") {
		t.Fatalf("stack lacks the panic site:\n%s", c.Panic.Stack)
	}
	if c := guard(runtime.Goexit); c.Panic != nil || !c.Goexit {
		t.Fatalf("Goexit: %+v", c)
	}
	var pn *runtime.PanicNilError
	if c := guard(func() { panic(nil) }); c.Panic == nil || !errors.As(c.Panic.Value.(error), &pn) {
		t.Fatalf("panic(nil) must not look like Goexit: %+v", c)
	}
}
