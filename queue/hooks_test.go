package queue_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

type ctxKey struct{}

// seen is one hook call: which hook, its ctx and its event.
type seen struct {
	hook string
	ctx  context.Context
	ev   queue.Event
}

// recorder records every hook call of a queue.
type recorder struct {
	mu    sync.Mutex
	calls []seen
}

func (r *recorder) hook(name string) func(context.Context, queue.Event) {
	return func(ctx context.Context, e queue.Event) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, seen{name, ctx, e})
	}
}

func (r *recorder) hooks() queue.Hooks {
	return queue.Hooks{
		OnEnqueue: r.hook("OnEnqueue"), OnStart: r.hook("OnStart"), OnSuccess: r.hook("OnSuccess"),
		OnRetry: r.hook("OnRetry"), OnDead: r.hook("OnDead"), OnDrop: r.hook("OnDrop"),
		OnDeadEvicted: r.hook("OnDeadEvicted"),
	}
}

func (r *recorder) of(id string) []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seen
	for _, c := range r.calls {
		if c.ev.ID == id {
			out = append(out, c)
		}
	}
	return out
}

// Each hook gets the context of the work it reports on: the producer's for its enqueue, the
// handler's own for the events of a handler run, one with the values of Consume's ctx for a
// job that died without a run; and, where a handler ran, how long it ran.
func TestHooksGetTheWorksContextAndDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		q, _ := queue.New[string](bg, queue.WithHooks(r.hooks()))
		defer q.Close(bg)
		var mu sync.Mutex
		handlerCtx := map[string][]context.Context{}
		pctx := context.WithValue(bg, ctxKey{}, "producer")
		for _, p := range []string{"ok", "flaky", "poison"} {
			if _, err := q.Enqueue(pctx, p, queue.WithID(p)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Enqueue(pctx, "late", queue.WithID("late"), queue.WithStartBy(time.Now().Add(-time.Second))); err != nil {
			t.Fatal(err)
		}
		// Consumed once every job and its OnEnqueue are in: a worker could
		// otherwise start a job before its producer's OnEnqueue returned.
		cctx := context.WithValue(bg, ctxKey{}, "consumer")
		c, err := q.Consume(cctx, func(ctx context.Context, j queue.Job[string]) error {
			mu.Lock()
			handlerCtx[j.ID] = append(handlerCtx[j.ID], ctx)
			mu.Unlock()
			switch j.Payload {
			case "ok":
				time.Sleep(3 * time.Second)
				return nil
			case "flaky":
				time.Sleep(2 * time.Second)
				if j.Attempt == 1 {
					return errors.New("try again")
				}
				return nil
			case "poison":
				time.Sleep(time.Second)
				panic("poison")
			}
			return retry.Permanent(errors.New("unexpected " + j.Payload))
		}, queue.WithWorkers(1), queue.WithLease(time.Hour), queue.WithBackoff(backoff.Constant(time.Minute)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Drain(bg); err != nil {
			t.Fatal(err)
		}
		type want struct {
			hook     string
			ctx      string // the ctx's value: whose it is
			run      int    // the handler run whose ctx it is (1, 2), or 0 for none
			attempt  int
			duration time.Duration
		}
		for id, wants := range map[string][]want{
			"ok":     {{"OnEnqueue", "producer", 0, 0, 0}, {"OnStart", "consumer", 1, 1, 0}, {"OnSuccess", "consumer", 1, 1, 3 * time.Second}},
			"flaky":  {{"OnEnqueue", "producer", 0, 0, 0}, {"OnStart", "consumer", 1, 1, 0}, {"OnRetry", "consumer", 1, 1, 2 * time.Second}, {"OnStart", "consumer", 2, 2, 0}, {"OnSuccess", "consumer", 2, 2, 2 * time.Second}},
			"poison": {{"OnEnqueue", "producer", 0, 0, 0}, {"OnStart", "consumer", 1, 1, 0}, {"OnDead", "consumer", 1, 1, time.Second}},
			// Dead-lettered without a run: its attempts used, none.
			"late": {{"OnEnqueue", "producer", 0, 0, 0}, {"OnDead", "consumer", 0, 0, 0}},
		} {
			got := r.of(id)
			if len(got) != len(wants) {
				t.Errorf("%s: %d hook calls %v, want %d", id, len(got), got, len(wants))
				continue
			}
			for i, w := range wants {
				g := got[i]
				if g.hook != w.hook || g.ctx.Value(ctxKey{}) != w.ctx || g.ev.Attempt != w.attempt || g.ev.Duration != w.duration {
					t.Errorf("%s call %d: %s, ctx of the %v, attempt %d, duration %v; want %s, ctx of the %s, attempt %d, duration %v",
						id, i, g.hook, g.ctx.Value(ctxKey{}), g.ev.Attempt, g.ev.Duration, w.hook, w.ctx, w.attempt, w.duration)
				}
				mu.Lock()
				if w.run > 0 && g.ctx != handlerCtx[id][w.run-1] {
					t.Errorf("%s call %d (%s): not the ctx of handler run %d", id, i, g.hook, w.run)
				}
				mu.Unlock()
			}
		}
		var pe *queue.PanicError
		if d := r.of("poison")[2].ev; !errors.As(d.Err, &pe) || pe.Where != "Handler" || pe.Value != "poison" || d.Reason != queue.ReasonPanic {
			t.Errorf("OnDead of the poison job: %+v; want a *PanicError from the Handler, reason panic", d)
		}
	})
}

// OnDead of a job evicted by DropOldest, and OnDrop, run in the producer's goroutine with its
// ctx; neither has a Duration.
func TestProducerHooksGetTheEnqueueContext(t *testing.T) {
	var r recorder
	q, _ := queue.New[string](bg, queue.WithCapacity(1), queue.WithOverflow(queue.DropOldest), queue.WithHooks(r.hooks()))
	defer q.Close(bg)
	ctx := context.WithValue(bg, ctxKey{}, "second")
	mustEnqueue(t, q, "first", queue.WithID("first"))
	if _, err := q.Enqueue(ctx, "second", queue.WithID("second")); err != nil {
		t.Fatal(err)
	}
	got := r.of("first")
	if len(got) != 2 || got[1].hook != "OnDead" || got[1].ctx.Value(ctxKey{}) != "second" ||
		got[1].ev.Reason != queue.ReasonEvicted || got[1].ev.Duration != 0 {
		t.Errorf("hooks of the evicted job: %+v; want OnEnqueue, then OnDead with the evicting Enqueue's ctx, reason evicted", got)
	}

	var r2 recorder
	q2, _ := queue.New[string](bg, queue.WithCapacity(1), queue.WithOverflow(queue.DropNewest), queue.WithHooks(r2.hooks()))
	defer q2.Close(bg)
	mustEnqueue(t, q2, "first")
	if _, err := q2.Enqueue(ctx, "second", queue.WithID("second")); !errors.Is(err, queue.ErrDropped) {
		t.Fatalf("Enqueue at capacity: %v, want ErrDropped", err)
	}
	if got := r2.of("second"); len(got) != 1 || got[0].hook != "OnDrop" || got[0].ctx.Value(ctxKey{}) != "second" || !errors.Is(got[0].ev.Err, queue.ErrDropped) {
		t.Errorf("hooks of the dropped job: %+v; want OnDrop with the Enqueue's ctx and ErrDropped", got)
	}
}

// Event and Health are slog.LogValuers: a group of their non-zero fields.
func TestEventLogValue(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	logger.Info("x", "e", queue.Event{ID: "j1", Key: "k", Attempt: 3, Err: errors.New("boom"),
		Delay: 2 * time.Second, Reason: queue.ReasonAttempts, Duration: 1500 * time.Millisecond})
	logger.Info("x", "e", queue.Event{ID: "j2", Reason: queue.ReasonEvicted})
	logger.Info("x", "e", queue.Event{})
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	logger.Info("x", "h", queue.Health{Reachable: false, Since: since, Reconnects: 2, Losses: 1,
		LastError: queue.ErrUnavailable, LastErrorAt: since})
	logger.Info("x", "h", queue.Health{Reachable: true, Since: since})
	want := `{"level":"INFO","msg":"x","e":{"id":"j1","key":"k","attempt":3,"err":"boom","delay":2000000000,"reason":"attempts","duration":1500000000}}
{"level":"INFO","msg":"x","e":{"id":"j2","reason":"evicted"}}
{"level":"INFO","msg":"x"}
{"level":"INFO","msg":"x","h":{"reachable":false,"since":"2026-01-02T03:04:05Z","reconnects":2,"losses":1,"last_error":"queue: backend unavailable","last_error_at":"2026-01-02T03:04:05Z"}}
{"level":"INFO","msg":"x","h":{"reachable":true,"since":"2026-01-02T03:04:05Z"}}
`
	if got := buf.String(); got != want {
		t.Errorf("logged\n%s\nwant\n%s", got, want)
	}
}
