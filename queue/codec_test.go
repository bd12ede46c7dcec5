package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

type order struct {
	ID    int
	Items []string
}

// bytesOnly hides the in-memory backend's value passing, so the queue
// encodes payloads with its codec as it does for a broker backend.
type bytesOnly struct{ driver.Backend }

// With a byte backend the payload is encoded (JSON by default): the handler
// gets its own copy, so a producer mutating its value afterwards changes
// nothing.
func TestDefaultCodecCopiesPayload(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	q, err := queue.New[order](context.Background(), queue.WithBackend(bytesOnly{b}))
	if err != nil {
		t.Fatal(err)
	}
	o := order{ID: 7, Items: []string{"tea"}}
	if _, err := q.Enqueue(ctx, o, queue.WithID("o7")); err != nil {
		t.Fatal(err)
	}
	o.Items[0] = "coffee" // mutated after Enqueue
	var d driver.Delivery
	if err := b.Receive(ctx, 1e9, &d); err != nil {
		t.Fatal(err)
	}
	if d.Value != nil || string(d.Body) != `{"ID":7,"Items":["tea"]}` {
		t.Fatalf("stored body %q, value %v: want JSON of the value at Enqueue", d.Body, d.Value)
	}
	if _, err := b.Bury(ctx, &d, queue.ReasonPermanent, queue.Attempt{Number: 1}); err != nil {
		t.Fatal(err)
	}
	for dl, err := range q.DeadLetters(ctx) {
		if err != nil || dl.Job.Payload.Items[0] != "tea" {
			t.Fatalf("dead letter %+v, %v", dl, err)
		}
	}
}

type failingCodec struct{}

func (failingCodec) Marshal(order) ([]byte, error)   { return nil, errors.New("no") }
func (failingCodec) Unmarshal([]byte) (order, error) { return order{}, errors.New("no") }

func TestCustomCodec(t *testing.T) {
	q, err := queue.New[order](context.Background(), queue.WithBackend(bytesOnly{memory.New()}), queue.WithCodec[order](failingCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(context.Background(), order{}); err == nil || !strings.HasPrefix(err.Error(), "queue: encode payload") {
		t.Fatalf("Enqueue with a failing codec: %v", err)
	}
	wantPanic(t, "queue: WithCodec(queue_test.stringCodec): not a Codec[queue_test.order], the queue's payload type",
		func() { _, _ = queue.New[order](context.Background(), queue.WithCodec[string](stringCodec{})) })
}

type stringCodec struct{}

func (stringCodec) Marshal(s string) ([]byte, error)   { return []byte(s), nil }
func (stringCodec) Unmarshal(b []byte) (string, error) { return string(b), nil }

// panickyCodec panics decoding the body "poison".
type panickyCodec struct{ stringCodec }

func (c panickyCodec) Unmarshal(b []byte) (string, error) {
	if string(b) == "poison" {
		panic("cannot decode poison")
	}
	return c.stringCodec.Unmarshal(b)
}

// A payload that makes the codec panic is dead-lettered once, like one that
// fails to decode: the panic does not take down the worker, which would
// leave the job leased, to panic again at each redelivery.
func TestCodecPanicDeadLettersTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		q, err := queue.New[string](context.Background(), queue.WithBackend(bytesOnly{memory.New()}), queue.WithCodec[string](panickyCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		var handled []string
		c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
			handled = append(handled, j.Payload)
			return nil
		}, queue.WithWorkers(1), queue.WithLease(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"ok1", "poison", "ok2"} {
			if _, err := q.Enqueue(ctx, p, queue.WithID(p)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Minute) // many backend leases: a leased poison job would come back
		if _, err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
		s, _ := q.Stats(ctx)
		if strings.Join(handled, ",") != "ok1,ok2" || s.Acked != 2 || s.Dead != 1 || s.InFlight+s.Ready+s.Delayed != 0 {
			t.Fatalf("handled %v, stats %+v: want ok1 and ok2 acked, poison dead, nothing left", handled, s)
		}
		for dl, err := range q.DeadLetters(ctx) {
			if err == nil || dl.Job.ID != "poison" || dl.Reason != queue.ReasonDecode ||
				len(dl.History) != 1 || !strings.Contains(dl.History[0].Error, "codec panicked") {
				t.Errorf("dead letter %+v (%v): want poison, decode, one attempt naming the codec's panic, and the decode error", dl, err)
			}
		}
	})
}
