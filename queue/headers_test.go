package queue_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/corral-go/corral/queue"
)

// Enqueue and Message refuse headers past their bounds, or with a key or value that some
// backend cannot keep, with an error that says which; nothing is stored.
func TestEnqueueRefusesBadHeaders(t *testing.T) {
	many := map[string]string{}
	for i := range 65 {
		many[fmt.Sprint("k", i)] = "v"
	}
	bad := []struct {
		name string
		h    map[string]string
		why  string
	}{
		{"too many", many, "65 pairs, more than 64"},
		{"too big", map[string]string{"a": strings.Repeat("x", 16384)}, "headers of 16385 bytes are longer than 16384"},
		{"empty key", map[string]string{"": "v"}, "key is empty"},
		{"long key", map[string]string{strings.Repeat("k", 257): "v"}, "key of 257 bytes is longer than 256"},
		{"key with LF", map[string]string{"a\nb": "v"}, "contains a carriage return or line feed"},
		{"key with a space at the end", map[string]string{"a ": "v"}, "begins or ends with a space or tab"},
		{"value with NUL", map[string]string{"a": "x\x00y"}, `header "a": value contains a NUL byte`},
		{"invalid UTF-8 value", map[string]string{"a": "caf\xc3"}, `header "a": value is not valid UTF-8`},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			q, err := queue.New[string](bg)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close(bg)
			_, err = q.Enqueue(bg, "p", queue.WithHeaders(b.h))
			if err == nil || !strings.HasPrefix(err.Error(), "queue: header") || !strings.Contains(err.Error(), b.why) {
				t.Errorf("Enqueue: %v; want an error starting %q that says %q", err, "queue: header", b.why)
			}
			if _, err := q.Message("p", queue.WithHeaders(b.h)); err == nil || !strings.HasPrefix(err.Error(), "queue: header") {
				t.Errorf("Message: %v; want an error starting %q", err, "queue: header")
			}
			if s, _ := q.Stats(bg); s.Ready != 0 || s.Enqueued != 0 {
				t.Errorf("stats %+v: want nothing stored", s)
			}
		})
	}
}

// Headers at their bounds are kept; WithHeaders copies its map, and several add up, the later
// value of a key winning.
func TestWithHeadersCopiesAndMerges(t *testing.T) {
	full := map[string]string{}
	for i := range 64 {
		full[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", 16384/64-3)
	}
	q, err := queue.New[string](bg)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(bg)
	h := map[string]string{"a": "1", "b": "2"}
	opt := queue.WithHeaders(h)
	h["a"] = "changed after the option was made"
	m, err := q.Message("p", opt, queue.WithHeaders(map[string]string{"b": "3", "c": "4"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "1", "b": "3", "c": "4"}; !maps.Equal(m.Headers, want) {
		t.Errorf("headers %v, want %v", m.Headers, want)
	}
	if m, err := q.Message("p", queue.WithHeaders(full)); err != nil || !maps.Equal(m.Headers, full) {
		t.Errorf("64 headers of 16384 bytes: %v", err)
	}
	got := make(chan map[string]string, 1)
	c, err := q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
		got <- j.Headers
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(bg)
	if _, err := q.Enqueue(bg, "p", queue.WithHeaders(full)); err != nil {
		t.Fatal(err)
	}
	if h := <-got; !maps.Equal(h, full) {
		t.Errorf("handler got %d headers, want the 64 enqueued", len(h))
	}
}
