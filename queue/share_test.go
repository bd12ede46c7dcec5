package queue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/queue"
)

// turns records, in order, which consumer of a Share started each job, and
// how many of each ran at once.
type turns struct {
	mu      sync.Mutex
	order   []string
	running map[string]int
	peak    map[string]int
	total   int // running over every consumer
	peakAll int
}

func newTurns() *turns { return &turns{running: map[string]int{}, peak: map[string]int{}} }

// handler returns a handler for the consumer name that takes d.
func (tr *turns) handler(name string, d time.Duration) queue.Handler[int] {
	return func(ctx context.Context, j queue.Job[int]) error {
		tr.mu.Lock()
		tr.order = append(tr.order, name)
		tr.running[name]++
		tr.total++
		tr.peak[name] = max(tr.peak[name], tr.running[name])
		tr.peakAll = max(tr.peakAll, tr.total)
		tr.mu.Unlock()
		time.Sleep(d)
		tr.mu.Lock()
		tr.running[name]--
		tr.total--
		tr.mu.Unlock()
		return nil
	}
}

// count returns how many of the first n turns went to name.
func (tr *turns) count(name string, n int) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	c := 0
	for _, x := range tr.order[:min(n, len(tr.order))] {
		if x == name {
			c++
		}
	}
	return c
}

// peakOf returns the most handlers of name that ran at once.
func (tr *turns) peakOf(name string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.peak[name]
}

func (tr *turns) len() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.order)
}

// filled returns a queue holding n jobs.
func filled(t *testing.T, n int) *queue.Queue[int] {
	t.Helper()
	q, err := queue.New[int](context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	for i := range n {
		if _, err := q.Enqueue(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	return q
}

func consumeShared(t *testing.T, q *queue.Queue[int], h queue.Handler[int], opts ...queue.ConsumerOption) *queue.Consumer[int] {
	t.Helper()
	c, err := q.Consume(context.Background(), h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Close(context.Background()) })
	return c
}

// While both have work, consumers of weights 6 and 1 get their turns 6 to 1:
// of the first 700 jobs, 600 and 100, give or take a turn, and so of every
// run of turns from the start; never more than the Share's 4 handlers run
// at once.
func TestShareWeighted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sh := queue.NewShare(4, queue.Weighted)
		tr := newTurns()
		users, bulk := filled(t, 1000), filled(t, 1000)
		consumeShared(t, users, tr.handler("users", time.Second), queue.WithShare(sh, "users", 6))
		synctest.Wait() // users holds the 4 slots: the start is the same every run
		consumeShared(t, bulk, tr.handler("bulk", time.Second), queue.WithShare(sh, "bulk", 1))
		for tr.len() < 700 {
			time.Sleep(time.Second)
		}
		u, b := tr.count("users", 700), tr.count("bulk", 700)
		if u < 599 || u > 601 || u+b != 700 {
			t.Errorf("of the first 700 turns, users got %d and bulk %d: want 600 and 100, give or take a turn", u, b)
		}
		// The jobs start 4 at a time, in an order within each second that
		// the scheduler picks: count whole seconds.
		for _, n := range []int{28, 84, 280} {
			if u := tr.count("users", n); u < 6*n/7-1 || u > 6*n/7+1 {
				t.Errorf("of the first %d turns, users got %d: want %d, give or take a turn", n, u, 6*n/7)
			}
		}
		tr.mu.Lock()
		peak := tr.peakAll
		tr.mu.Unlock()
		if peak != 4 {
			t.Errorf("%d handlers ran at once, want the Share's 4", peak)
		}
		synctest.Wait() // every loop waits for a slot or runs its handler
		st, err := sh.Stats(context.Background())
		if err != nil || len(st) != 2 || st[0].Name != "users" || st[1].Name != "bulk" || st[0].Weight != 6 ||
			st[0].Cap != 4 || st[0].Depth+st[0].Waiting+int(st[0].Turns) != 1000 || st[0].Lag <= 0 {
			t.Fatalf("stats %+v (%v): want users then bulk, with depth and lag", st, err)
		}
		if share := st[0].Share; share < 0.84 || share > 0.88 {
			t.Errorf("users' share of worker time %.3f, want 6/7 (0.857) within 0.02", share)
		}
	})
}

// A consumer with no work leaves its turns to the others: with the
// high-weight queue empty, the bulk queue runs on every slot.
func TestShareIdleLeavesTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sh := queue.NewShare(4, queue.Weighted)
		tr := newTurns()
		users, bulk := filled(t, 0), filled(t, 40)
		consumeShared(t, users, tr.handler("users", time.Second), queue.WithShare(sh, "users", 6))
		consumeShared(t, bulk, tr.handler("bulk", time.Second), queue.WithShare(sh, "bulk", 1))
		start := time.Now()
		for tr.len() < 40 {
			time.Sleep(time.Millisecond)
		}
		if el := time.Since(start); tr.peakOf("bulk") != 4 || el > 10*time.Second {
			t.Errorf("bulk ran %d at once and started its 40 jobs in %v: want 4 at once, 10s", tr.peakOf("bulk"), el)
		}
		// Users come back after 10s idle with no credit: from now on the
		// turns go 6 to 1 again, not all to users until they catch up.
		for i := range 70 {
			if _, err := users.Enqueue(context.Background(), i); err != nil {
				t.Fatal(err)
			}
			if _, err := bulk.Enqueue(context.Background(), i); err != nil {
				t.Fatal(err)
			}
		}
		for tr.len() < 40+56 {
			time.Sleep(time.Second)
		}
		tr.mu.Lock()
		next := tr.order[40 : 40+56] // 14 whole seconds
		tr.mu.Unlock()
		u := 0
		for _, x := range next {
			if x == "users" {
				u++
			}
		}
		if u < 47 || u > 49 {
			t.Errorf("after coming back, users got %d of the next 56 turns: want 48, give or take a turn", u)
		}
	})
}

// WithWorkers caps a consumer's slots: a weight-6 consumer capped at 1 runs
// one job at a time, and the others take the rest of the Share.
func TestShareCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sh := queue.NewShare(4, queue.Weighted)
		tr := newTurns()
		users, bulk := filled(t, 100), filled(t, 100)
		consumeShared(t, users, tr.handler("users", time.Second), queue.WithShare(sh, "users", 6), queue.WithWorkers(1))
		synctest.Wait() // users has started its first job
		consumeShared(t, bulk, tr.handler("bulk", time.Second), queue.WithShare(sh, "bulk", 1))
		time.Sleep(20*time.Second + time.Millisecond)
		if tr.peakOf("users") != 1 || tr.peakOf("bulk") != 3 || tr.count("users", 1000) != 21 || tr.count("bulk", 1000) != 63 {
			t.Errorf("peaks %d and %d, %d users and %d bulk started in 20s: want users 1 at a time (21), bulk on the 3 other slots (63)",
				tr.peakOf("users"), tr.peakOf("bulk"), tr.count("users", 1000), tr.count("bulk", 1000))
		}
	})
}

// Under Strict, a lower priority runs only when the higher has nothing
// waiting; equal priorities take turns.
func TestShareStrict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sh := queue.NewShare(2, queue.Strict)
		tr := newTurns()
		high, low, low2 := filled(t, 20), filled(t, 10), filled(t, 10)
		consumeShared(t, low, tr.handler("low", time.Second), queue.WithShare(sh, "low", 1))
		synctest.Wait() // low holds both slots
		consumeShared(t, low2, tr.handler("low2", time.Second), queue.WithShare(sh, "low2", 1))
		consumeShared(t, high, tr.handler("high", time.Second), queue.WithShare(sh, "high", 2))
		for tr.len() < 40 {
			time.Sleep(time.Second)
		}
		// From the second second on, high takes both slots until it has
		// nothing waiting; then the two low consumers take turns, each
		// second one of each, until low runs out.
		tr.mu.Lock()
		order := append([]string(nil), tr.order...)
		tr.mu.Unlock()
		var got []string
		for i := 0; i < len(order); i += 2 {
			pair := []string{order[i], order[i+1]}
			slices.Sort(pair)
			got = append(got, strings.Join(pair, "+"))
		}
		want := []string{"low+low"}
		for range 10 {
			want = append(want, "high+high")
		}
		for range 8 {
			want = append(want, "low+low2")
		}
		want = append(want, "low2+low2")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("turns, a second at a time: %v\nwant %v", got, want)
		}
	})
}

// Closing a consumer whose workers wait for a slot gives their jobs back
// unattempted, and takes the consumer out of the Share's stats.
func TestShareCloseWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		sh := queue.NewShare(1, queue.Weighted)
		busy, waiting := filled(t, 1), filled(t, 3)
		release := make(chan struct{})
		consumeShared(t, busy, func(ctx context.Context, j queue.Job[int]) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		},
			queue.WithShare(sh, "busy", 1), queue.WithLease(time.Hour))
		synctest.Wait()
		attempts := make(chan int, 3)
		c := consumeShared(t, waiting, func(ctx context.Context, j queue.Job[int]) error { attempts <- j.Attempt; return nil },
			queue.WithShare(sh, "waiting", 1), queue.WithWorkers(2), queue.WithLease(20*time.Second))
		// Past the end of the waiting jobs' backend leases (30s) but for
		// their renewals: else they would come back to the idle loop.
		time.Sleep(time.Minute)
		st, _ := sh.Stats(ctx)
		if len(st) != 2 || st[1].Waiting != 3 || st[1].Running != 0 || st[0].Running != 1 {
			t.Fatalf("stats %+v: want busy running 1, waiting with its 3 jobs waiting for a slot", st)
		}
		r, err := c.Close(ctx)
		if err != nil || r.Returned != 3 || r.Acked != 0 || r.Abandoned != 0 {
			t.Fatalf("close report %+v (%v): want the 3 waiting jobs returned", r, err)
		}
		if st, _ := sh.Stats(ctx); len(st) != 1 || st[0].Name != "busy" {
			t.Errorf("stats after close %+v: want busy alone", st)
		}
		close(release)
		consumeShared(t, waiting, func(ctx context.Context, j queue.Job[int]) error { attempts <- j.Attempt; return nil },
			queue.WithShare(sh, "again", 1))
		for range 3 {
			if a := await(t, attempts); a != 1 {
				t.Errorf("job handled at attempt %d, want 1: waiting spent none", a)
			}
		}
	})
}

func TestShareMisuse(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"no workers", "queue: NewShare(0): need at least 1 worker", func() { queue.NewShare(0, queue.Weighted) }},
		{"sharing", "queue: NewShare: unknown sharing Sharing(7)", func() { queue.NewShare(1, 7) }},
		{"nil share", "queue: WithShare(nil): nil share", func() { queue.WithShare(nil, "x", 1) }},
		{"weight", `queue: WithShare("x", 0): need a weight from 1 to 1000000`, func() { queue.WithShare(queue.NewShare(1, queue.Strict), "x", 0) }},
		{"zero share", "queue: zero Share: use queue.NewShare", func() {
			q, _ := queue.New[int](context.Background())
			defer q.Close(context.Background())
			_, _ = q.Consume(context.Background(), func(context.Context, queue.Job[int]) error { return nil },
				queue.WithShare(&queue.Share{}, "x", 1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != tc.want {
					t.Errorf("panic %v, want %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
}

// Under Strict, a higher consumer at its cap does not hold back a lower one:
// the slots it may not take go to the lower.
func TestShareStrictCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sh := queue.NewShare(3, queue.Strict)
		tr := newTurns()
		high, low := filled(t, 10), filled(t, 20)
		consumeShared(t, high, tr.handler("high", time.Second), queue.WithShare(sh, "high", 2), queue.WithWorkers(1))
		synctest.Wait()
		consumeShared(t, low, tr.handler("low", time.Second), queue.WithShare(sh, "low", 1))
		time.Sleep(10*time.Second - time.Millisecond)
		if h, l := tr.count("high", 100), tr.count("low", 100); h != 10 || l != 20 || tr.peakOf("high") != 1 || tr.peakOf("low") != 2 {
			t.Errorf("in 10s high ran %d (%d at once), low %d (%d at once): want 10 one at a time, 20 two at a time",
				h, tr.peakOf("high"), l, tr.peakOf("low"))
		}
	})
}
