package jetstream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

// Two versions of one payload: v2 keeps amounts in cents.
type orderV1 struct{ N, Amount int }

type orderV2 struct {
	N     int
	Cents int64
}

// process opens queue name as one process of a fleet would: its own
// connection, backend and queue.
func process[T any](t *testing.T, srv *natstest.Cluster, name string, opts ...queue.Option) *queue.Queue[T] {
	t.Helper()
	js, err := natsjs.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := queue.New[T](ctx, append([]queue.Option{queue.WithBackend(jetstream.New(js, name))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	return q
}

// runs records who handled each job, and what a handler should not have seen.
type runs struct {
	mu   sync.Mutex
	by   map[string][]string
	bad  []string
	seen chan struct{} // a value per run
}

func (r *runs) ran(id, by, problem string) {
	r.mu.Lock()
	r.by[id] = append(r.by[id], by)
	if problem != "" {
		r.bad = append(r.bad, id+": "+problem)
	}
	r.mu.Unlock()
	r.seen <- struct{}{}
}

func (r *runs) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for range n {
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("timed out waiting for %d handler runs", n)
		}
	}
}

// A rolling deploy over JetStream: v1 consumers alone, then a mixed fleet
// while producers move to v2, then the v1 consumers stop. Every job is
// handled exactly once, by a consumer that understands it, at its first
// attempt; nothing is dead-lettered.
func TestRollingDeploy(t *testing.T) {
	srv := natstest.Start(t)
	name := natstest.Prefix(t)
	t.Cleanup(func() {
		js, _ := natsjs.New(srv.Connect(t))
		deleteStreams(t, js, name)
	})
	ctx := context.Background()
	q1 := process[orderV1](t, srv, name, queue.WithVersion(1))
	q2 := process[orderV2](t, srv, name, queue.WithVersion(2),
		queue.WithUpgrade(1, func(o orderV1) (orderV2, error) { return orderV2{N: o.N, Cents: int64(o.Amount) * 100}, nil }))
	r := &runs{by: map[string][]string{}, seen: make(chan struct{}, 100)}
	version := map[string]int{}
	enqueue := func(v, n int) {
		var id string
		var err error
		if v == 1 {
			id, err = q1.Enqueue(ctx, orderV1{N: n, Amount: n})
		} else {
			id, err = q2.Enqueue(ctx, orderV2{N: n, Cents: int64(n) * 100})
		}
		if err != nil {
			t.Fatal(err)
		}
		version[id] = v
	}
	c1, err := q1.Consume(ctx, func(ctx context.Context, j queue.Job[orderV1]) error {
		var p string
		if j.Version != 1 || j.Attempt != 1 || j.Payload.Amount != j.Payload.N {
			p = fmt.Sprintf("v1 got version %d, attempt %d, %+v", j.Version, j.Attempt, j.Payload)
		}
		r.ran(j.ID, "v1", p)
		return nil
	}, queue.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	for n := range 10 {
		enqueue(1, n)
	}
	r.wait(t, 10)
	c2, err := q2.Consume(ctx, func(ctx context.Context, j queue.Job[orderV2]) error {
		var p string
		if j.Attempt != 1 || j.Payload.Cents != int64(j.Payload.N)*100 {
			p = fmt.Sprintf("v2 got version %d, attempt %d, %+v", j.Version, j.Attempt, j.Payload)
		}
		r.ran(j.ID, "v2", p)
		return nil
	}, queue.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	for n := range 20 {
		enqueue(1+n%2, 10+n)
	}
	r.wait(t, 20)
	if _, err := c1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for n := range 10 {
		enqueue(2, 30+n)
	}
	r.wait(t, 10)
	if _, err := c2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		t.Fatalf("handlers saw what they should not: %v", r.bad)
	}
	for id, v := range version {
		switch by := r.by[id]; {
		case len(by) != 1:
			t.Errorf("job %s (v%d) handled %d times (%v), want once", id, v, len(by), by)
		case v == 2 && by[0] != "v2":
			t.Errorf("v2 job %s handled by %s", id, by[0])
		}
	}
	s2, err := q2.Stats(ctx)
	if err != nil || s2.Dead != 0 || s2.Ready+s2.InFlight+s2.Delayed != 0 {
		t.Errorf("stats %+v (%v): want nothing dead or left", s2, err)
	}
}

// A Share over two JetStream queues gives weights 3 and 1 their turns 3 to
// 1 while both have work: of the first 40 jobs, 30 and 10, give or take 4
// (real time: a job received late misses its turn now and then).
func TestShareWeighted(t *testing.T) {
	srv := natstest.Start(t)
	users, bulk := natstest.Prefix(t)+"u", natstest.Prefix(t)+"b"
	t.Cleanup(func() {
		js, _ := natsjs.New(srv.Connect(t))
		deleteStreams(t, js, users)
		deleteStreams(t, js, bulk)
	})
	ctx := context.Background()
	qu, qb := process[int](t, srv, users), process[int](t, srv, bulk)
	for i := range 60 {
		if _, err := qu.Enqueue(ctx, i); err != nil {
			t.Fatal(err)
		}
		if _, err := qb.Enqueue(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu    sync.Mutex
		order []string
	)
	done := make(chan struct{}, 120)
	handler := func(name string) queue.Handler[int] {
		return func(ctx context.Context, j queue.Job[int]) error {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond) // the work
			done <- struct{}{}
			return nil
		}
	}
	sh := queue.NewShare(2, queue.Weighted)
	cu, err := qu.Consume(ctx, handler("users"), queue.WithShare(sh, "users", 3))
	if err != nil {
		t.Fatal(err)
	}
	defer cu.Close(ctx)
	cb, err := qb.Consume(ctx, handler("bulk"), queue.WithShare(sh, "bulk", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	deadline := time.After(time.Minute)
	for range 44 {
		select {
		case <-done:
		case <-deadline:
			t.Fatal("timed out")
		}
	}
	mu.Lock()
	first := append([]string(nil), order[:40]...)
	mu.Unlock()
	u := 0
	for _, x := range first {
		if x == "users" {
			u++
		}
	}
	if u < 26 || u > 34 {
		t.Errorf("of the first 40 turns, users got %d: want 30, give or take 4 (%v)", u, first)
	}
	st, err := sh.Stats(ctx)
	if err != nil || len(st) != 2 || st[0].Depth+st[1].Depth == 0 || st[0].Share < 0.6 || st[0].Share > 0.9 {
		t.Errorf("stats %+v (%v): want both with depth, users' share of time about 3/4", st, err)
	}
}
