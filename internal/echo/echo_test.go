package echo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/echo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOf(t *testing.T) {
	cause := errors.New("first failure")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	live := context.Background()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want bool
	}{
		{ctx, context.Canceled, true},
		{ctx, fmt.Errorf("wrapped: %w", context.DeadlineExceeded), true},
		{ctx, fmt.Errorf("saw: %w", cause), true},
		{ctx, errors.New("own failure"), false},
		{live, errors.New("own failure"), false},
		{live, context.Canceled, true},
	} {
		if got := echo.Of(c.ctx, c.err); got != c.want {
			t.Errorf("Of(ctx, %v) = %v; want %v", c.err, got, c.want)
		}
	}
}
