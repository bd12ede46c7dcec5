package await_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/internal/await"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDone(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for range 1000 { // a ready result wins over an ended ctx every time, not by chance
		if !await.Done(ended, closed) {
			t.Fatal("an ended ctx hid a closed done")
		}
	}
	if await.Done(ended, make(chan struct{})) {
		t.Fatal("Done reported an open channel closed")
	}
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		time.AfterFunc(time.Second, func() { close(done) })
		start := time.Now()
		if !await.Done(context.Background(), done) || time.Since(start) != time.Second {
			t.Fatalf("Done returned after %v; want true after 1s", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start = time.Now()
		if await.Done(ctx, make(chan struct{})) || time.Since(start) != 2*time.Second {
			t.Fatalf("Done returned after %v; want false after 2s", time.Since(start))
		}
	})
}
