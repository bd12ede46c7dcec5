package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/corral-go/corral/queue"
)

type order struct {
	ID    int
	Items []string
}

// With a byte backend the payload is encoded (JSON by default): the handler
// gets its own copy, so a producer mutating its value afterwards changes
// nothing.
func TestDefaultCodecCopiesPayload(t *testing.T) {
	ctx := context.Background()
	b := queue.NewMemory()
	q, err := queue.New[order](queue.WithBackend(bytesOnly{b}))
	if err != nil {
		t.Fatal(err)
	}
	o := order{ID: 7, Items: []string{"tea"}}
	if _, err := q.Enqueue(ctx, o, queue.WithID("o7")); err != nil {
		t.Fatal(err)
	}
	o.Items[0] = "coffee" // mutated after Enqueue
	var d queue.Delivery
	if err := b.Receive(ctx, 1e9, &d); err != nil {
		t.Fatal(err)
	}
	if d.Value != nil || string(d.Body) != `{"ID":7,"Items":["tea"]}` {
		t.Fatalf("stored body %q, value %v: want JSON of the value at Enqueue", d.Body, d.Value)
	}
	if err := b.Bury(ctx, &d, queue.ReasonPermanent, queue.Attempt{Number: 1}); err != nil {
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
	q, err := queue.New[order](queue.WithBackend(bytesOnly{queue.NewMemory()}), queue.WithCodec[order](failingCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(context.Background(), order{}); err == nil || !strings.HasPrefix(err.Error(), "queue: encode payload") {
		t.Fatalf("Enqueue with a failing codec: %v", err)
	}
	if _, err := queue.New[order](queue.WithCodec[string](stringCodec{})); err == nil {
		t.Fatal("New accepted a codec for another type")
	}
}

type stringCodec struct{}

func (stringCodec) Marshal(s string) ([]byte, error)   { return []byte(s), nil }
func (stringCodec) Unmarshal(b []byte) (string, error) { return string(b), nil }
