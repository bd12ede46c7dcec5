package jobid

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// IDs are the prefix and the counter in hex, across chunks; two generators
// draw different prefixes.
func TestNext(t *testing.T) {
	var g, g2 Generator
	g.Init()
	g2.Init()
	seen := map[string]bool{}
	for i := range 3*Chunk + 5 {
		id := g.Next()
		if len(id) != Len || strings.Trim(id, "0123456789abcdef") != "" || seen[id] {
			t.Fatalf("generated ID %q: want %d hex digits, unique", id, Len)
		}
		if want := g.prefix + fmt.Sprintf("%016x", i); id != want {
			t.Fatalf("generated ID %d is %q, want %q", i, id, want)
		}
		seen[id] = true
	}
	if id := g2.Next(); seen[id] {
		t.Fatalf("two generators generated the same ID %q", id)
	}
}

// Ahead is true for exactly the IDs Next has yet to return.
func TestAhead(t *testing.T) {
	var g Generator
	g.Init()
	id0 := g.Next()
	next := g.prefix + fmt.Sprintf("%016x", 1)
	for _, c := range []struct {
		id   string
		want bool
	}{
		{id0, false}, {next, true}, {g.prefix + fmt.Sprintf("%016x", Chunk*7), true},
		{strings.ToUpper(next), false}, {"x" + next[1:], false}, {next + "0", false}, {"", false},
	} {
		if got := g.Ahead(c.id); got != c.want {
			t.Errorf("Ahead(%q) = %v, want %v", c.id, got, c.want)
		}
	}
	if g.Next() != next || g.Ahead(next) {
		t.Errorf("after Next returned %s, Ahead still reports it", next)
	}
}

// Goroutines generating at once, across chunks, get every counter once.
func TestNextConcurrent(t *testing.T) {
	var g Generator
	g.Init()
	const workers, each = 4, 3 * Chunk
	ids := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ids[w] = append(ids[w], g.Next())
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, l := range ids {
		for _, id := range l {
			seen[id] = true
		}
	}
	for i := range workers * each {
		if id := g.prefix + fmt.Sprintf("%016x", i); !seen[id] {
			t.Fatalf("ID %d (%s) not generated", i, id)
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("%d distinct IDs, want %d", len(seen), workers*each)
	}
}
