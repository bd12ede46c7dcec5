package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// outage is a Memory that fails Enqueue and Receive with ErrUnavailable while
// down is set, and says how often it reconnected.
type outage struct {
	*memory.Backend
	down       atomic.Bool
	reconnects atomic.Uint64
	losses     atomic.Uint64
}

var errOutage = fmt.Errorf("test broker: %w", ErrUnavailable)

func (b *outage) Enqueue(ctx context.Context, m driver.Message) (driver.EnqueueResult, error) {
	if b.down.Load() {
		return driver.EnqueueResult{}, errOutage
	}
	return b.Backend.Enqueue(ctx, m)
}

func (b *outage) Receive(ctx context.Context, lease time.Duration, d *driver.Delivery) error {
	if b.down.Load() {
		return errOutage
	}
	return b.Backend.Receive(ctx, lease, d)
}

func (b *outage) Stats(ctx context.Context) (driver.Stats, error) {
	if b.down.Load() {
		return driver.Stats{}, errOutage
	}
	return b.Backend.Stats(ctx)
}

func (b *outage) Reconnects() uint64 { return b.reconnects.Load() }

func (b *outage) Losses() uint64 { return b.losses.Load() }

type ctxKey struct{}

// Health follows the backend's answers: an ErrUnavailable makes it
// unreachable, with the error and the time, and the next answer (even an
// ErrDuplicate) reachable again; OnHealth sees each change once, with the
// ctx of the call that found it; the reconnect and loss counts come from the
// backend, in Health, Stats and OnHealth, and a Stats that finds the losses
// grew calls OnHealth.
func TestHealthFollowsBackendAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &outage{Backend: memory.New()}
		var (
			mu      sync.Mutex
			changes []Health
		)
		q, err := New[string](context.Background(), WithBackend(b), WithHooks(Hooks{OnHealth: func(ctx context.Context, h Health) {
			if ctx.Value(ctxKey{}) != "enqueue" {
				t.Errorf("OnHealth ctx %v: want the Enqueue's", ctx)
			}
			mu.Lock()
			changes = append(changes, h)
			mu.Unlock()
		}}))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if h := q.Health(); !h.Reachable || !h.Since.Equal(start) || h.LastError != nil {
			t.Fatalf("new queue's health %+v: want reachable since its creation, no error", h)
		}
		ctx := context.WithValue(context.Background(), ctxKey{}, "enqueue")
		enqueueOK(t, q, "a", WithID("a"))
		time.Sleep(time.Minute)
		b.down.Store(true)
		b.reconnects.Store(3)
		b.losses.Store(2)
		for range 2 {
			if _, err := q.Enqueue(ctx, "b", WithID("b")); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Enqueue during the outage: %v, want ErrUnavailable", err)
			}
		}
		down := time.Now()
		h := q.Health()
		if h.Reachable || !h.Since.Equal(down) || !errors.Is(h.LastError, ErrUnavailable) || !h.LastErrorAt.Equal(down) || h.Reconnects != 3 || h.Losses != 2 {
			t.Fatalf("health during the outage %+v: want unreachable since %v, its error, 3 reconnects, 2 losses", h, down)
		}
		if s, err := q.Stats(ctx); !errors.Is(err, ErrUnavailable) || s.Health.Reachable || s.Health.Reconnects != 3 || s.Health.Losses != 2 {
			t.Errorf("Stats: %v, health %+v: want the outage", err, s.Health)
		}
		time.Sleep(time.Minute)
		b.down.Store(false)
		b.losses.Store(3)
		if _, err := q.Enqueue(ctx, "a again", WithID("a")); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("Enqueue after the outage: %v, want ErrDuplicate", err)
		}
		up := time.Now()
		if h := q.Health(); !h.Reachable || !h.Since.Equal(up) || !errors.Is(h.LastError, ErrUnavailable) {
			t.Fatalf("health after the outage %+v: want reachable since %v, the outage's error kept", h, up)
		}
		mu.Lock()
		defer mu.Unlock()
		// down (found by the Enqueue), the losses found by Stats (2), up (found by the Enqueue,
		// which does not look at the losses: 3 by then).
		if len(changes) != 3 || changes[0].Reachable || !changes[0].Since.Equal(down) ||
			changes[1].Reachable || changes[1].Losses != 2 || !changes[2].Reachable || !changes[2].Since.Equal(up) {
			t.Fatalf("OnHealth saw %+v: want down at %v, the losses Stats found, then up at %v", changes, down, up)
		}
		if changes[0].Reconnects != 3 || changes[0].Losses != 2 || changes[2].Losses != 3 {
			t.Errorf("OnHealth saw %+v: want the backend's counts as of each change (3 reconnects; 2, 2, then 3 losses)", changes)
		}
	})
}

// A consumer whose Receive fails with ErrUnavailable makes the queue
// unreachable, and reachable again once Receive answers: the operator tells
// a broker outage from an empty queue.
func TestHealthSeesConsumerOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &outage{Backend: memory.New()}
		b.down.Store(true)
		q, err := New[string](context.Background(), WithBackend(b))
		if err != nil {
			t.Fatal(err)
		}
		c, handled := recording(t, q)
		if h := q.Health(); h.Reachable {
			t.Fatalf("health %+v while Receive fails: want unreachable", h)
		}
		b.down.Store(false)
		enqueueOK(t, q, "x")
		if p := <-handled; p != "x" {
			t.Fatalf("handled %q", p)
		}
		if h := q.Health(); !h.Reachable {
			t.Fatalf("health %+v after Receive answered: want reachable", h)
		}
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s, _ := q.Stats(context.Background()); s.BackendErrors == 0 {
			t.Errorf("stats %+v: want the failed receives counted", s)
		}
	})
}

// A consumer's Receive after which the backend's Losses grew calls OnHealth once per growth,
// with the counts, and WithLogger logs it at Error; calls that find no growth call nothing.
func TestOnHealthWhenAReceiveFindsALoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &outage{Backend: memory.New()}
		var logged bytes.Buffer
		logger := textLogger(&logged)
		var (
			mu      sync.Mutex
			changes []Health
		)
		q, err := New[string](context.Background(), WithBackend(b), WithLogger(logger), WithHooks(Hooks{OnHealth: func(ctx context.Context, h Health) {
			mu.Lock()
			changes = append(changes, h)
			mu.Unlock()
		}}))
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close(context.Background())
		c, handled := recording(t, q)
		b.losses.Store(1)
		enqueueOK(t, q, "a")
		enqueueOK(t, q, "b") // received after a Receive that finds no growth
		for range 2 {
			<-handled
		}
		synctest.Wait()
		if _, err := q.Stats(context.Background()); err != nil { // no growth: no call
			t.Fatal(err)
		}
		b.losses.Store(3)
		enqueueOK(t, q, "c")
		<-handled
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(changes) != 2 || changes[0].Losses != 1 || changes[1].Losses != 3 || !changes[0].Reachable || !changes[1].Reachable {
			t.Errorf("OnHealth saw %+v: want two calls, reachable, with 1 then 3 losses", changes)
		}
		want := "level=ERROR msg=\"queue: broker lost stored jobs\" event.reachable=true event.losses=1\n" +
			"level=ERROR msg=\"queue: broker lost stored jobs\" event.reachable=true event.losses=3\n"
		if got := logged.String(); !strings.Contains(got, want) || strings.Count(got, "\n") != 2 {
			t.Errorf("logged\n%s\nwant\n%s", got, want)
		}
	})
}

// recording starts a consumer of q with one worker whose handler sends each job's payload on
// the channel returned (of 4), and returns once the worker waits in Receive. Call it in a
// synctest bubble.
func recording(t *testing.T, q *Queue[string]) (*Consumer[string], <-chan string) {
	t.Helper()
	handled := make(chan string, 4)
	c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
		handled <- j.Payload
		return nil
	}, WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	return c, handled
}

// textLogger returns a logger of text records into buf, from Info up, without their time,
// the health's since, and the attributes drop.
func textLogger(buf *bytes.Buffer, drop ...string) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
		Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "since" || slices.Contains(drop, a.Key) {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// An OnHealth hook that panics on a loss a consumer's Receive found is the hook's panic, as
// any consumer hook's: the job received is handled all the same, the worker goes on, and Close
// re-raises the panic naming OnHealth.
func TestOnHealthPanicOnALossSurfacesInClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &outage{Backend: memory.New()}
		q, err := New[string](context.Background(), WithBackend(b), WithHooks(Hooks{
			OnHealth: func(context.Context, Health) { panic("health hook bug") },
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close(context.Background())
		c, handled := recording(t, q)
		b.losses.Store(1)
		enqueueOK(t, q, "a")
		enqueueOK(t, q, "b")
		if got := []string{<-handled, <-handled}; got[0] != "a" || got[1] != "b" {
			t.Fatalf("handled %v; want a, b: the worker went on after the hook's panic", got)
		}
		synctest.Wait()
		pe := closePanicError(t, c)
		if pe == nil || pe.Where != "OnHealth" || pe.Value != "health hook bug" {
			t.Fatalf("Close panicked with %+v, want the OnHealth hook's panic", pe)
		}
		if s, err := q.Stats(context.Background()); err != nil || s.Acked != 2 || s.InFlight != 0 || s.Ready != 0 {
			t.Errorf("stats %+v, %v: want both jobs acked, none left", s, err)
		}
	})
}

// WithLogger records what happened, not what Health shows: a reachability change that carries
// a loss not yet reported is logged as the change, and the loss, once reported, as a loss.
func TestLoggerTellsALossFromAReachabilityChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &outage{Backend: memory.New()}
		var logged bytes.Buffer
		logger := textLogger(&logged, "last_error", "last_error_at")
		q, err := New[string](context.Background(), WithBackend(b), WithLogger(logger))
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close(context.Background())
		b.down.Store(true)
		if _, err := q.Enqueue(context.Background(), "x"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Enqueue during the outage: %v", err)
		}
		b.down.Store(false)
		b.losses.Store(1)
		// The Enqueue finds the backend reachable again, its Health showing the loss; the Stats
		// finds the loss.
		enqueueOK(t, q, "y")
		if _, err := q.Stats(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := "level=WARN msg=\"queue: backend unreachable\" event.reachable=false\n" +
			"level=INFO msg=\"queue: backend reachable\" event.reachable=true event.losses=1\n" +
			"level=ERROR msg=\"queue: broker lost stored jobs\" event.reachable=true event.losses=1\n"
		if got := logged.String(); got != want {
			t.Errorf("logged\n%s\nwant\n%s", got, want)
		}
	})
}

// ackedBeforeExtend is a Memory whose Extend waits until its delivery was
// acked, then extends: a renewal that raced its job's ack.
type ackedBeforeExtend struct {
	*memory.Backend
	extending chan struct{} // closed when Extend was called
	acked     chan struct{} // closed when Ack returned
	once      sync.Once
}

func (b *ackedBeforeExtend) Extend(ctx context.Context, d *driver.Delivery, lease time.Duration) error {
	b.once.Do(func() { close(b.extending) })
	<-b.acked
	return b.Backend.Extend(ctx, d, lease)
}

func (b *ackedBeforeExtend) Ack(ctx context.Context, d *driver.Delivery) error {
	err := b.Backend.Ack(ctx, d)
	close(b.acked)
	return err
}

// A lease renewal that loses the race with its job's ack gets ErrLeaseLost
// though no job was affected: it is not counted in Stats.BackendErrors.
func TestRenewalRacingAckIsNoBackendError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &ackedBeforeExtend{Backend: memory.New(), extending: make(chan struct{}), acked: make(chan struct{})}
		q, err := New[string](context.Background(), WithBackend(b))
		if err != nil {
			t.Fatal(err)
		}
		c, err := q.Consume(context.Background(), func(ctx context.Context, j Job[string]) error {
			<-b.extending // a renewal is on its way: end the job under it
			return nil
		}, WithWorkers(1), WithLease(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		enqueueOK(t, q, "x")
		<-b.acked
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, _ := q.Stats(context.Background())
		if s.Acked != 1 || s.BackendErrors != 0 {
			t.Fatalf("stats %+v: want 1 acked and no backend error", s)
		}
	})
}
