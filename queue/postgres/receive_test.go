package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
)

// claimTracer watches the claim queries sent on a pool: how many are in flight at once, at
// most, and, if hold is set, it holds the first len(hold) of them, the i-th until hold[i] is
// closed (after closing held[i]), and closes ended[i] when the i-th has ended.
type claimTracer struct {
	sql      atomic.Pointer[string]
	inFlight atomic.Int64
	most     atomic.Int64
	count    atomic.Int64
	hold     []chan struct{}
	held     []chan struct{}
	ended    []chan struct{}
}

type claimKey struct{}

func (c *claimTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if s := c.sql.Load(); s == nil || data.SQL != *s {
		return ctx
	}
	i := c.count.Add(1) - 1
	n := c.inFlight.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	if i < int64(len(c.hold)) {
		close(c.held[i])
		<-c.hold[i]
	}
	return context.WithValue(ctx, claimKey{}, i)
}

func (c *claimTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if i, ok := ctx.Value(claimKey{}).(int64); ok {
		c.inFlight.Add(-1)
		if i < int64(len(c.ended)) {
			close(c.ended[i])
		}
	}
}

// tracedBackend opens a backend on a pool of its own traced by tr, closed when t ends.
func tracedBackend(t *testing.T, dsn string, tr *claimTracer) *postgres.Backend {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 32
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := postgres.New(pool, queueName(t))
	sql := postgres.ClaimSQL(b)
	tr.sql.Store(&sql)
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return b
}

// The receivers of a backend take turns: one claim query at a time looks for jobs, for all
// of them, and each job is delivered once.
func TestReceiversShareClaims(t *testing.T) {
	srv, _ := startDB(t)
	var tr claimTracer
	b := tracedBackend(t, srv.DSN(), &tr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const receivers, jobs = 16, 300
	got := make(chan string, jobs)
	var wg sync.WaitGroup
	for range receivers {
		wg.Go(func() {
			for {
				var d driver.Delivery
				if err := b.Receive(ctx, time.Minute, &d); err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("Receive: %v", err)
					}
					return
				}
				if err := b.Ack(ctx, &d); err != nil {
					t.Errorf("Ack %s: %v", d.ID, err)
				}
				got <- d.ID
			}
		})
	}
	for i := range jobs {
		if _, err := b.Enqueue(ctx, driver.Message{ID: fmt.Sprint(i), Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	for range jobs {
		seen[recvWithin(t, got, 30*time.Second, "a job")]++
	}
	cancel()
	wg.Wait()
	close(got)
	for id := range got {
		seen[id]++
	}
	for i := range jobs {
		if n := seen[fmt.Sprint(i)]; n != 1 {
			t.Errorf("job %d delivered %d times, want 1", i, n)
		}
	}
	if len(seen) != jobs {
		t.Errorf("%d jobs delivered, want %d", len(seen), jobs)
	}
	if m := tr.most.Load(); m != 1 {
		t.Errorf("at most %d claim queries in flight at once, want 1", m)
	}
	if n := tr.count.Load(); n == 0 {
		t.Error("no claim query seen")
	}
}

// A job claimed for a receiver whose ctx ended while the claim was in flight is given back as
// if never delivered, before that receiver's Receive returns: the job is ready then, and the
// next receiver gets it at once, attempt 1, not redelivered.
func TestAbandonedClaimGivenBack(t *testing.T) { abandonedClaim(t, false) }

// A receiver waiting for the claimer that left and then gives up waiting (its abandon context,
// driver.WithAbandon) returns at once, before the claim query serving it has ended.
func TestGivenUpClaimReturns(t *testing.T) { abandonedClaim(t, true) }

// abandonedClaim has a receiver leave (and, if giveUp, give up) while the claimer's query for
// it is held, and checks when it returns and what it left.
func abandonedClaim(t *testing.T, giveUp bool) {
	srv, _ := startDB(t)
	tr := claimTracer{
		hold:  []chan struct{}{make(chan struct{}), make(chan struct{})},
		held:  []chan struct{}{make(chan struct{}), make(chan struct{})},
		ended: []chan struct{}{make(chan struct{}), make(chan struct{})},
	}
	b := tracedBackend(t, srv.DSN(), &tr)
	var once sync.Once
	let := func() { once.Do(func() { close(tr.hold[1]) }) }
	defer let() // a failing test lets the claimer's query end before the Backend's Close waits for it
	queued, left := make(chan struct{}, 1), make(chan struct{}, 1)
	postgres.OnClaimQueued(b, func() {
		select {
		case queued <- struct{}{}:
		default:
		}
	})
	postgres.OnClaimLeft(b, func() { left <- struct{}{} })
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	// The first receiver claims for itself; the second waits for the claimer, whose query
	// is held until the second receiver has left.
	first := make(chan driver.Delivery, 1)
	go func() {
		var d driver.Delivery
		if err := b.Receive(ctx, time.Hour, &d); err != nil {
			t.Errorf("first Receive: %v", err)
		}
		first <- d
	}()
	recvWithin(t, tr.held[0], 10*time.Second, "the first claim query")
	abandon, abandonCancel := context.WithCancel(ctx)
	defer abandonCancel()
	rctx, cancel := context.WithCancelCause(driver.WithAbandon(ctx, abandon))
	errc := make(chan error, 1)
	go func() {
		var d driver.Delivery
		errc <- b.Receive(rctx, time.Hour, &d)
	}()
	recvWithin(t, queued, 10*time.Second, "the second receiver's request")
	close(tr.hold[0])
	if d := recvWithin(t, first, 10*time.Second, "the first receiver's job"); d.ID != "a" {
		t.Fatalf("first receiver got %q, want a", d.ID)
	}
	recvWithin(t, tr.held[1], 10*time.Second, "the claimer's query")
	stop := errors.New("receiver gone")
	cancel(stop)
	// The receiver leaves its request in flight before the claim may answer it (an answer
	// that comes first, as its ctx ends, is taken).
	recvWithin(t, left, 10*time.Second, "the receiver leaving its request")
	if giveUp {
		abandonCancel()
		if err := recvWithin(t, errc, 10*time.Second, "the Receive that gave up"); !errors.Is(err, stop) {
			t.Fatalf("Receive that gave up: %v, want its ctx's cause", err)
		}
		select {
		case <-tr.ended[1]:
			t.Error("the Receive that gave up returned only once the claim query serving it ended")
		default:
		}
		let() // the claimer gives b back; Close waits for it
		return
	}
	let() // the claim leases b, for nobody
	if err := recvWithin(t, errc, 10*time.Second, "the abandoned Receive"); !errors.Is(err, stop) {
		t.Fatalf("abandoned Receive: %v, want its ctx's cause", err)
	}
	// The Receive returned only once the claim it was waiting for had ended, and b was back.
	select {
	case <-tr.ended[1]:
	default:
		t.Error("the abandoned Receive returned before the claim query serving it ended")
	}
	wantGivenBack(t, b, "b", 1)
}

// wantGivenBack checks that job id, given back by a receiver that left, is ready beside
// inFlight other jobs, and that the next Receive gets it as if it had never been delivered:
// attempt 1, not redelivered.
func wantGivenBack(t *testing.T, b *postgres.Backend, id string, inFlight int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s, err := b.Stats(ctx); err != nil || s.Ready != 1 || s.InFlight != inFlight {
		t.Fatalf("stats after the receiver left: %+v, %v; want %s ready, %d in flight", s, err, id, inFlight)
	}
	var d driver.Delivery
	if err := b.Receive(ctx, time.Minute, &d); err != nil {
		t.Fatalf("Receive after the one that left: %v", err)
	}
	if d.ID != id || d.Attempt != 1 || d.Redelivered {
		t.Errorf("got %s attempt %d redelivered %v, want %s attempt 1 not redelivered", d.ID, d.Attempt, d.Redelivered, id)
	}
}

// holdProxy forwards connections to a server, and holds the server's first answer on a
// connection armed for it (by the client's address) until release is closed: the server has
// then run the statement, and the client has not read its answer.
type holdProxy struct {
	ln      net.Listener
	server  string
	mu      sync.Mutex
	armed   string // the client address whose next answer to hold
	held    chan struct{}
	release chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// let hands the held answer on (and any later one armed).
func (p *holdProxy) let() { p.once.Do(func() { close(p.release) }) }

func startHoldProxy(t *testing.T, server string) *holdProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{ln: ln, server: server, held: make(chan struct{}), release: make(chan struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		p.let()
		_ = ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *holdProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed by the cleanup
		}
		s, err := net.Dial("tcp", p.server)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.wg.Go(func() { // the client's side: forwarded as it comes
			_, _ = io.Copy(s, c)
			_ = s.Close()
		})
		p.wg.Go(func() { // the server's side: held once if armed for this client
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 {
					p.mu.Lock()
					hold := p.armed == c.RemoteAddr().String()
					if hold {
						p.armed = ""
					}
					p.mu.Unlock()
					if hold {
						close(p.held)
						<-p.release
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}
}

// armTracer arms the proxy for the connection that sends the claim query.
type armTracer struct {
	p   *holdProxy
	sql string
	on  chan struct{} // closed to arm, for the next claim query only
	mu  sync.Mutex
}

func (a *armTracer) TraceQueryStart(ctx context.Context, c *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-a.on:
		if data.SQL == a.sql {
			a.p.mu.Lock()
			a.p.armed = c.PgConn().Conn().LocalAddr().String()
			a.p.mu.Unlock()
			a.on = make(chan struct{}) // once
		}
	default:
	}
	return ctx
}

func (a *armTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A receiver whose ctx is cancelled after its own claim query leased it a job, before the
// answer reached it, gives the job back before Receive returns: the job is ready then, and
// the next receiver gets it, attempt 1, not redelivered.
func TestCancelledReceiveGivesBack(t *testing.T) { heldClaim(t, false) }

// A receiver that left and then gives up waiting (its abandon context, driver.WithAbandon, as
// a consumer's Close makes when its ctx ends) returns at once, while the claim's answer is
// still held: the job stays in flight, for its lease.
func TestGivenUpReceiveReturns(t *testing.T) { heldClaim(t, true) }

// heldClaim has a Receive's own claim query lease job "a", holds the server's answer, cancels
// the receiver and (if giveUp) its abandon context, and checks what the receiver left.
func heldClaim(t *testing.T, giveUp bool) {
	srv, _ := startDB(t)
	cfg, err := pgxpool.ParseConfig(srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	p := startHoldProxy(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	defer p.let() // a failing test lets the answer go before the Backend's Close waits for it
	host, port, _ := net.SplitHostPort(p.ln.Addr().String())
	pn, _ := strconv.Atoi(port)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(pn)
	tr := &armTracer{p: p, on: make(chan struct{})}
	cfg.ConnConfig.Tracer = tr
	cfg.MaxConns = 1 // one connection for every statement (the listener has its own, unpooled)
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := postgres.New(pool, queueName(t), postgres.WithCallTimeout(time.Hour))
	tr.sql = postgres.ClaimSQL(b)
	if err := b.Open(ctx, driver.Config{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(ctx) })
	// A first job, received and acked, has the claim statement prepared on the pool's one
	// connection, so that the answer held below is its execution's.
	for _, id := range []string{"warm", "a"} {
		if _, err := b.Enqueue(ctx, driver.Message{ID: id, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if id == "a" {
			break
		}
		var d driver.Delivery
		if err := b.Receive(ctx, time.Hour, &d); err != nil {
			t.Fatal(err)
		}
		if err := b.Ack(ctx, &d); err != nil {
			t.Fatal(err)
		}
	}
	abandon, abandonCancel := context.WithCancel(ctx)
	defer abandonCancel()
	rctx, cancel := context.WithCancelCause(driver.WithAbandon(ctx, abandon))
	errc := make(chan error, 1)
	tr.mu.Lock()
	close(tr.on)
	tr.mu.Unlock()
	go func() {
		var d driver.Delivery
		errc <- b.Receive(rctx, time.Hour, &d)
	}()
	recvWithin(t, p.held, 10*time.Second, "the claim query's answer")
	stop := errors.New("receiver gone")
	cancel(stop)
	if giveUp {
		abandonCancel()
		if err := recvWithin(t, errc, 10*time.Second, "the Receive that gave up"); !errors.Is(err, stop) {
			t.Fatalf("Receive that gave up: %v, want its ctx's cause", err)
		}
		p.let()
		if s, err := b.Stats(ctx); err != nil || s.Ready != 0 || s.InFlight != 1 {
			t.Fatalf("stats after the receiver gave up: %+v, %v; want 0 ready, 1 in flight", s, err)
		}
		return
	}
	p.let()
	if err := recvWithin(t, errc, 10*time.Second, "the cancelled Receive"); !errors.Is(err, stop) {
		t.Fatalf("cancelled Receive: %v, want its ctx's cause", err)
	}
	wantGivenBack(t, b, "a", 0)
}
