package hooks_test

import (
	"context"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/hooks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestChainCallsBothInOrder(t *testing.T) {
	var got []string
	a := func(_ context.Context, e int) { got = append(got, "a", string(rune('0'+e))) }
	b := func(_ context.Context, e int) { got = append(got, "b", string(rune('0'+e))) }
	hooks.Chain(a, b)(context.Background(), 7)
	if want := []string{"a", "7", "b", "7"}; !slices.Equal(got, want) {
		t.Fatalf("calls = %q, want %q", got, want)
	}
}

func TestChainSkipsNil(t *testing.T) {
	var n int
	a := func(context.Context, int) { n++ }
	if hooks.Chain[int](nil, nil) != nil {
		t.Fatal("Chain(nil, nil) != nil")
	}
	hooks.Chain(a, nil)(context.Background(), 0)
	hooks.Chain(nil, a)(context.Background(), 0)
	if n != 2 {
		t.Fatalf("calls = %d, want 2", n)
	}
}
