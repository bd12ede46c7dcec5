package queue_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/internal/logtest"
	"github.com/corral-go/corral/internal/proflabels"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// WithLogger logs one record per event, in the order the events happen, at their levels; the
// Hooks set by WithHooks are still called.
func TestWithLoggerRecords(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug, `level=DEBUG msg="queue: job enqueued" queue=mail event.id=ok
level=DEBUG msg="queue: job enqueued" queue=mail event.id=flaky
level=DEBUG msg="queue: job enqueued" queue=mail event.id=poison
level=DEBUG msg="queue: job started" queue=mail event.id=ok event.attempt=1
level=DEBUG msg="queue: job succeeded" queue=mail event.id=ok event.attempt=1
level=DEBUG msg="queue: job started" queue=mail event.id=flaky event.attempt=1
level=WARN msg="queue: job retried" queue=mail event.id=flaky event.attempt=1 event.err=flaky event.delay=1s
level=DEBUG msg="queue: job started" queue=mail event.id=poison event.attempt=1
level=ERROR msg="queue: job dead" queue=mail event.id=poison event.attempt=1 event.err="bad input" event.reason=permanent
level=DEBUG msg="queue: job started" queue=mail event.id=flaky event.attempt=2
level=DEBUG msg="queue: job succeeded" queue=mail event.id=flaky event.attempt=2
`},
		{slog.LevelWarn, `level=WARN msg="queue: job retried" queue=mail event.id=flaky event.attempt=1 event.err=flaky event.delay=1s
level=ERROR msg="queue: job dead" queue=mail event.id=poison event.attempt=1 event.err="bad input" event.reason=permanent
`},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var buf bytes.Buffer
				var enqueued int
				q, _ := queue.New[string](bg, queue.WithName("mail"), queue.WithLogger(logtest.Text(&buf, tc.level)),
					queue.WithHooks(queue.Hooks{OnEnqueue: func(context.Context, queue.Event) { enqueued++ }}))
				defer q.Close(bg)
				for _, p := range []string{"ok", "flaky", "poison"} {
					if _, err := q.Enqueue(bg, p, queue.WithID(p)); err != nil {
						t.Fatal(err)
					}
				}
				failed := false
				c, _ := q.Consume(bg, func(_ context.Context, j queue.Job[string]) error {
					switch {
					case j.Payload == "flaky" && !failed:
						failed = true
						return errors.New("flaky")
					case j.Payload == "poison":
						return retry.Permanent(errors.New("bad input"))
					}
					return nil
				}, queue.WithWorkers(1), queue.WithBackoff(backoff.Constant(time.Second)))
				time.Sleep(2 * time.Second) // past the retry's delay
				synctest.Wait()
				if _, err := c.Close(bg); err != nil {
					t.Fatal(err)
				}
				if got := buf.String(); got != tc.want {
					t.Fatalf("log:\n%s\nwant:\n%s", got, tc.want)
				}
				if enqueued != 3 {
					t.Fatalf("OnEnqueue calls = %d, want 3", enqueued)
				}
			})
		})
	}
}

// probeLabels is called by a handler: its name marks the handler's goroutine in the profile.
func probeLabels() (string, error) { return proflabels.Of("queue_test.probeLabels") }

// A named queue's handlers run with the label queue=name; an unnamed queue's with the labels
// of the goroutine that called Consume.
func TestWithNameLabelsHandlers(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []queue.Option
		want string
	}{
		{"named", []queue.Option{queue.WithName("mail")}, `{"queue":"mail"}`},
		{"unnamed", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := queue.New[string](bg, tc.opts...)
			defer q.Close(bg)
			type result struct {
				labels string
				err    error
			}
			got := make(chan result, 1)
			c, _ := q.Consume(bg, func(context.Context, queue.Job[string]) error {
				l, err := probeLabels()
				got <- result{l, err}
				return nil
			}, queue.WithWorkers(1))
			if _, err := q.Enqueue(bg, "x"); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if _, err := c.Close(bg); err != nil {
				t.Fatal(err)
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.labels != tc.want {
				t.Fatalf("labels %q, want %q", r.labels, tc.want)
			}
		})
	}
}

func TestWithNameEmptyPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != `queue: WithName(""): empty name` {
			t.Fatalf("recovered %v", r)
		}
	}()
	queue.WithName("")
}
