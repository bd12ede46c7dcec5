package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/memory"
)

// Queue.Message builds the Message Enqueue would store, with the queue's codec, ID and
// start-by rules, and stores nothing.
func TestMessageIsWhatEnqueueStores(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	q, err := queue.New[order](ctx, queue.WithBackend(bytesOnly{b}), queue.WithMaxWait(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	nb := before.Add(time.Hour)
	m, err := q.Message(order{ID: 1, Items: []string{"tea"}}, queue.WithKey("k"), queue.WithNotBefore(nb))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.ID) != 32 || m.Key != "k" || !m.NotBefore.Equal(nb) || string(m.Body) != `{"ID":1,"Items":["tea"]}` || m.Value != nil {
		t.Errorf("Message = %+v: want a generated ID, key k, the NotBefore, the JSON body", m)
	}
	if !m.StartBy.Equal(nb.Add(time.Minute)) {
		t.Errorf("StartBy %v, want NotBefore + the queue's max wait %v", m.StartBy, nb.Add(time.Minute))
	}
	if m.EnqueuedAt.Before(before.Add(-2*time.Second)) || m.EnqueuedAt.After(time.Now().Add(2*time.Second)) {
		t.Errorf("EnqueuedAt %v, want about now", m.EnqueuedAt)
	}
	m2, err := q.Message(order{ID: 2}, queue.WithID("given"), queue.WithStartBy(nb))
	if err != nil || m2.ID != "given" || !m2.StartBy.Equal(nb) {
		t.Errorf("Message with an ID and a start-by: %+v, %v", m2, err)
	}
	if m3, _ := q.Message(order{ID: 3}); m3.ID == m.ID {
		t.Errorf("two generated IDs are both %s", m.ID)
	}
	if s, err := q.Stats(ctx); err != nil || s.Enqueued != 0 || s.Ready+s.Delayed != 0 {
		t.Errorf("stats %+v, %v: want nothing enqueued or stored", s, err)
	}
	// What Enqueue stores for the same options has the same shape.
	if _, err := b.Enqueue(ctx, m); err != nil {
		t.Fatal(err)
	}
	if s, _ := q.Stats(ctx); s.Delayed != 1 {
		t.Errorf("stats %+v: want the message stored, delayed", s)
	}
}

// Queue.Message fails as Enqueue does before the backend: a bad payload, an ID the queue has
// yet to generate, a closed queue; a value-keeping backend gets the value.
func TestMessageErrors(t *testing.T) {
	ctx := context.Background()
	q, err := queue.New[order](ctx, queue.WithBackend(bytesOnly{memory.New()}), queue.WithCodec[order](failingCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Message(order{}); err == nil || !strings.Contains(err.Error(), "encode payload") {
		t.Errorf("Message with a failing codec: %v, want the encode error", err)
	}
	m, err := queue.New[string](ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := m.Message("x")
	ahead := first.ID[:16] + "00000000000000ff"
	if _, err := m.Message("y", queue.WithID(ahead)); err == nil || !strings.Contains(err.Error(), "yet to generate") {
		t.Errorf("Message with an ID ahead of the queue's: %v", err)
	}
	if v, err := m.Message("value"); err != nil || v.Value != "value" || v.Body != nil {
		t.Errorf("Message on a Memory: %+v, %v; want the value, no body", v, err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Message("z"); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Message after Close: %v, want ErrClosed", err)
	}
}
