package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

// deadlineSlack is how late a call may return after its deadline: the time for the runtime
// to run the call's goroutine again once its timer fired, on a loaded machine. It is a
// fraction of what the bug costs: a client without ContextTimeoutEnabled answers at its read
// timeout (3s by default), 2s after the call timeout below, or at the server's SIGCONT.
const deadlineSlack = 500 * time.Millisecond

// TestCallDeadlineWithAnyClient pins that WithCallTimeout and the caller's ctx bound every
// call on a client built as the README builds it, without ContextTimeoutEnabled: with the
// server SIGSTOPped, Enqueue and Stats fail with ErrUnavailable at the call timeout (the
// caller's 2s ctx is later), and Receive with the caller's cause at its 500ms ctx (the call
// timeout is later); none of them reports success after its deadline, not even when the
// server answers after the deadline and before the client's read timeout.
func TestCallDeadlineWithAnyClient(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	const callTimeout = time.Second
	b := redis.New(c, queueName(t), redis.WithCallTimeout(callTimeout))
	ctx := context.Background()
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	// Warm the pool and the script cache, so that the calls below only wait for answers.
	if _, err := b.Stats(ctx); err != nil {
		t.Fatal(err)
	}

	srv.Pause(t)
	paused := true
	defer func() {
		if paused {
			srv.Continue(t)
		}
	}()
	check := func(name string, d time.Duration, want error, call func(ctx context.Context) error) {
		t.Helper()
		cctx, cancel := context.WithTimeoutCause(ctx, d, want)
		defer cancel()
		start := time.Now()
		err := call(cctx)
		took := time.Since(start)
		t.Logf("%s: %v after %v", name, err, took)
		bound := min(d, callTimeout) + deadlineSlack
		if took > bound {
			t.Errorf("%s returned after %v, want within %v", name, took, bound)
		}
		if err == nil {
			t.Errorf("%s reported success after %v with the server stopped", name, took)
			return
		}
		if d < callTimeout && !errors.Is(err, want) {
			t.Errorf("%s: %v, want the caller's cause %v", name, err, want)
		}
		if d > callTimeout && !errors.Is(err, queue.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", name, err)
		}
	}
	callerCause := errors.New("caller's deadline")
	// The server answers 300ms after the call timeout, before the client's read timeout, on
	// a connection the client has in its pool: the answer comes after the deadline and must
	// not be a success.
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(callTimeout + 300*time.Millisecond) // the fault: the server stays stopped
		srv.Continue(t)
	}()
	check("Enqueue", 2*time.Second, callerCause, func(ctx context.Context) error {
		_, err := b.Enqueue(ctx, driver.Message{ID: "l", Body: []byte("x")})
		return err
	})
	<-resumed
	// Again, with the connection the late answer left in the pool.
	if _, err := b.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Pause(t)
	check("Enqueue", 2*time.Second, callerCause, func(ctx context.Context) error {
		_, err := b.Enqueue(ctx, driver.Message{ID: "j", Body: []byte("x")})
		return err
	})
	check("Stats", 2*time.Second, callerCause, func(ctx context.Context) error {
		_, err := b.Stats(ctx)
		return err
	})
	check("Receive", 500*time.Millisecond, callerCause, func(ctx context.Context) error {
		var d driver.Delivery
		return b.Receive(ctx, time.Minute, &d)
	})
	check("Enqueue", 500*time.Millisecond, callerCause, func(ctx context.Context) error {
		_, err := b.Enqueue(ctx, driver.Message{ID: "k", Body: []byte("x")})
		return err
	})
	srv.Continue(t)
	paused = false
	// The server answers again: a call within its deadline succeeds.
	if _, err := b.Stats(ctx); err != nil {
		t.Errorf("Stats after SIGCONT: %v", err)
	}
}

// TestCloseWaitsForAbandonedExchanges pins that the goroutine of an exchange abandoned at its
// call's deadline has an owner: with the server SIGSTOPped, Close cannot finish while the
// exchange waits for its answer (it returns its ctx's cause), and once the server answers the
// exchange ends and a Close of another Backend on the same client returns nil.
func TestCloseWaitsForAbandonedExchanges(t *testing.T) {
	srv := redistest.Start(t, "always")
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	open := func() *redis.Backend {
		b := redis.New(c, queueName(t), redis.WithCallTimeout(200*time.Millisecond))
		if err := b.Open(ctx, driver.Config{}); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b, other := open(), open()
	srv.Pause(t)
	paused := true
	defer func() {
		if paused {
			srv.Continue(t)
		}
	}()
	if _, err := b.Stats(ctx); !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("Stats with the server stopped: %v, want ErrUnavailable", err)
	}
	// b's Stats left an exchange waiting for the server (the client waits a minute).
	closing := errors.New("close's deadline")
	cctx, cancel := context.WithTimeoutCause(ctx, 300*time.Millisecond, closing)
	defer cancel()
	if err := b.Close(cctx); !errors.Is(err, closing) {
		t.Fatalf("Close with an exchange still waiting: %v, want its ctx's cause", err)
	}
	srv.Continue(t)
	paused = false
	// other's Close removes its consumer and waits for nothing of b's: it returns once the
	// server answers.
	if err := other.Close(ctx); err != nil {
		t.Fatalf("Close of the other Backend after SIGCONT: %v", err)
	}
}
