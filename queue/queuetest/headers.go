package queuetest

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/retry"
)

// roundTripHeaders are headers that a backend must keep byte for byte: keys
// that differ only in case, an empty value, spaces at the ends, CR and LF,
// quotes, a colon and text beyond ASCII in values.
var roundTripHeaders = map[string]string{
	"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	"Traceparent": "upper case is another key",
	"empty":       "",
	"spaces":      "  both ends\t",
	"lines":       "one\r\ntwo\nthree",
	"quote":       `"q" \ 'r': s`,
	"x-tenant":    "Zürich ✓",
}

// The headers a job is enqueued with reach its handler on every attempt,
// stay in its dead letter, and come back with it after a redrive.
func testHeaderRoundTrip(e *env) {
	ev, hooks := newEvents()
	q := e.newQueue(hooks)
	id := e.enqueue(q, "h", queue.WithHeaders(roundTripHeaders))
	seen := make(chan map[string]string, 3)
	redriven := make(chan struct{})
	e.consume(q, func(ctx context.Context, j queue.Job[string]) error {
		seen <- maps.Clone(j.Headers)
		if j.Headers != nil {
			j.Headers["traceparent"] = "changed by the handler" // its own copy: the job keeps its headers
		}
		select {
		case <-redriven:
			return nil
		default:
		}
		if j.Attempt == 1 {
			return errBoom // retried
		}
		return retry.Permanent(errBoom)
	}, queue.WithWorkers(1), queue.WithMaxAttempts(3))
	for _, what := range []string{"first attempt", "retry"} {
		checkHeaders(e, what, recv(e, seen, what))
	}
	recv(e, ev.dead, "dead letter")
	dls := deadLetters(e, q)
	if len(dls) != 1 || dls[0].Job.ID != id {
		e.Fatalf("dead letters %+v: want %s", dls, id)
	}
	checkHeaders(e, "dead letter", dls[0].Job.Headers)
	close(redriven)
	if err := q.Redrive(context.Background(), id); err != nil {
		e.Fatalf("Redrive: %v", err)
	}
	checkHeaders(e, "redriven job", recv(e, seen, "redriven delivery"))
	recv(e, ev.acked, "ack")

	// A job enqueued without headers has none.
	e.enqueue(q, "plain")
	if h := recv(e, seen, "job without headers"); len(h) != 0 {
		e.Errorf("job without headers delivered with %v", h)
	}
}

// A released job keeps its headers; one enqueued without comes back
// without.
func testHeaderRelease(e *env) {
	b := e.openBackend(driver.Config{})
	defer func() { _ = b.Close(context.Background()) }()
	bg := context.Background()
	m := driver.Message{ID: "hdr", Body: []byte("x"), Value: "x", EnqueuedAt: time.Now(), Headers: maps.Clone(roundTripHeaders)}
	if _, err := b.Enqueue(bg, m); err != nil {
		e.Fatalf("Enqueue: %v", err)
	}
	var d driver.Delivery
	for _, what := range []string{"first delivery", "released delivery"} {
		if err := b.Receive(bg, 100*e.unit, &d); err != nil || d.ID != "hdr" {
			e.Fatalf("Receive (%s): %v, %q", what, err, d.ID)
		}
		checkHeaders(e, what, d.Headers)
		if err := b.Start(bg, &d); err != nil {
			e.Fatalf("Start: %v", err)
		}
		if what == "first delivery" {
			if err := b.Release(bg, &d, 0); err != nil {
				e.Fatalf("Release: %v", err)
			}
		}
	}
	if err := b.Ack(bg, &d); err != nil {
		e.Fatalf("Ack: %v", err)
	}
	if _, err := b.Enqueue(bg, driver.Message{ID: "plain", Body: []byte("y"), Value: "y", EnqueuedAt: time.Now()}); err != nil {
		e.Fatalf("Enqueue: %v", err)
	}
	if err := b.Receive(bg, 100*e.unit, &d); err != nil || d.ID != "plain" || len(d.Headers) != 0 {
		e.Fatalf("Receive: %v, %q with headers %v; want plain without headers", err, d.ID, d.Headers)
	}
}

func checkHeaders(e *env, what string, got map[string]string) {
	e.Helper()
	if !maps.Equal(got, roundTripHeaders) {
		e.Errorf("%s: headers %s, want %s", what, fmt.Sprintf("%q", got), fmt.Sprintf("%q", roundTripHeaders))
	}
}
