package scope_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/corral-go/corral/scope"
)

// WithLogger logs each failure as it happens, while Run still returns them all.
func ExampleWithLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // a fixed output for the example
			}
			return a
		},
	}))
	err := scope.Run(context.Background(), func(s *scope.Scope) error {
		s.GoNamed("fetch", func(context.Context) error { return errors.New("timeout") })
		return nil
	}, scope.WithLogger(logger))
	fmt.Println(err)
	// Output:
	// level=ERROR msg="scope: task failed" event="scope: task \"fetch\" failed: timeout"
	// scope: task "fetch" failed: timeout
}
