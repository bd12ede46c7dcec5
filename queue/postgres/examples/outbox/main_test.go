package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun: the rolled-back sign-up leaves no user and no email; the others get exactly one.
func TestRun(t *testing.T) {
	t.Setenv("CORRAL_POSTGRES_URL", "") // a throwaway server
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out); err != nil {
		t.Fatal(err)
	}
	want := `sign-up of bad@@example failed, rolled back: not an email address
user ada@example.com: welcome email sent true
user grace@example.com: welcome email sent true
jobs left: 0
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
