package panics_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-go/corral/internal/panics"
)

func TestErrorMessages(t *testing.T) {
	boom := errors.New("boom")
	pe := panics.PoolError(boom, []byte("stack"))
	if got := pe.Error(); got != "pool: task panicked: boom" {
		t.Fatalf("pool message %q", got)
	}
	if !errors.Is(pe, boom) {
		t.Fatal("pool error does not unwrap to its value")
	}
	se := panics.ScopeError("fetch", 2, &panics.Recovered{Value: "v", Stack: []byte("STACK")})
	other := errors.New("other failure")
	panics.Carry(se, other)
	want := "scope: task \"fetch\" panicked: v\n\nSTACK\nand other failure"
	if got := se.Error(); got != want {
		t.Fatalf("scope message %q; want %q", got, want)
	}
	if !errors.Is(se, other) {
		t.Fatal("scope error does not unwrap to what it carries")
	}
	alone := panics.Alone(se)
	if len(panics.Others(alone)) != 0 || len(panics.Others(se)) != 1 || alone.Name != "fetch" {
		t.Fatalf("Alone = %+v (others %v); want a copy without the others", alone, panics.Others(alone))
	}
	if got := panics.ScopeError("", 3, &panics.Recovered{Value: 1}).Error(); !strings.HasPrefix(got, "scope: task #3 panicked: 1") {
		t.Fatalf("unnamed scope message %q", got)
	}
}
