package queue_test

import (
	"context"
	"strings"
	"testing"

	"github.com/corral-go/corral/queue"
)

// Enqueue and Message refuse, whatever the backend, an ID or an ordering key that some backend
// cannot store and give back unchanged, with an error that names the field; nothing is
// stored.
func TestEnqueueRefusesIDsAndKeysNoBackendCanStore(t *testing.T) {
	bad := []struct{ name, s, why string }{
		{"NUL", "a\x00b", "contains a NUL byte"},
		{"invalid UTF-8", "a\xffb", "is not valid UTF-8"},
		{"truncated UTF-8", "caf\xc3", "is not valid UTF-8"},
		{"CR", "a\rb", "contains a carriage return or line feed"},
		{"LF", "a\nb", "contains a carriage return or line feed"},
		{"leading space", " a", "begins or ends with a space or tab"},
		{"trailing tab", "a\t", "begins or ends with a space or tab"},
		{"too long", strings.Repeat("x", 1025), "of 1025 bytes is longer than 1024"},
	}
	for _, field := range []struct {
		name string
		opt  func(string) queue.EnqueueOption
	}{{"job ID", queue.WithID}, {"ordering key", queue.WithKey}} {
		for _, b := range bad {
			t.Run(field.name+"/"+b.name, func(t *testing.T) {
				q, err := queue.New[string](bg)
				if err != nil {
					t.Fatal(err)
				}
				defer q.Close(bg)
				_, err = q.Enqueue(bg, "p", field.opt(b.s))
				if err == nil || !strings.HasPrefix(err.Error(), "queue: "+field.name+" ") || !strings.Contains(err.Error(), b.why) {
					t.Errorf("Enqueue: %v; want an error starting %q that says it %s", err, "queue: "+field.name, b.why)
				}
				if _, err := q.Message("p", field.opt(b.s)); err == nil || !strings.HasPrefix(err.Error(), "queue: "+field.name+" ") {
					t.Errorf("Message: %v; want an error starting %q", err, "queue: "+field.name)
				}
				if s, _ := q.Stats(bg); s.Ready != 0 || s.Enqueued != 0 {
					t.Errorf("stats %+v: want nothing stored", s)
				}
			})
		}
	}
}

// Any other ID or key is stored and given back unchanged: unicode, inner spaces, symbols, and
// the longest one allowed.
func TestEnqueueKeepsUnicodeIDsAndKeys(t *testing.T) {
	q, err := queue.New[string](bg)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(bg)
	cases := []struct{ id, key string }{
		{"café-☕-日本語", "ключ 🔑"},
		{"a b\u00a0c", "x.y*z>"},
		{strings.Repeat("é", 512), strings.Repeat("k", 1024)},
	}
	for _, c := range cases {
		if id, err := q.Enqueue(bg, c.id, queue.WithID(c.id), queue.WithKey(c.key)); err != nil || id != c.id {
			t.Fatalf("Enqueue(WithID(%q), WithKey(%q)) = %q, %v", c.id, c.key, id, err)
		}
	}
	got := make(chan queue.Job[string], len(cases))
	c, err := q.Consume(bg, func(_ context.Context, j queue.Job[string]) error {
		got <- j
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, c := range cases {
		want[c.id] = c.key
	}
	for range cases {
		j := <-got
		if k, ok := want[j.ID]; !ok || k != j.Key || j.Payload != j.ID {
			t.Errorf("job ID %q key %q payload %q: not one enqueued", j.ID, j.Key, j.Payload)
		}
		delete(want, j.ID)
	}
	if _, err := c.Close(bg); err != nil {
		t.Fatal(err)
	}
}
