// Command shutdown is a small order service that shuts down gracefully.
//
// POST /orders stores an order as a job in a queue and answers 202 at once.
// A consumer (orderWorkers at a time) charges the card at a payment gateway,
// renders the invoice on a pool bounded to the CPU count (the CPU step,
// shared by every consumer worker), and mails it. A declined card is a
// permanent failure and lands in the dead letters; a gateway hiccup is
// retried.
//
// On SIGINT or SIGTERM the service drains within a deadline, in the order the
// work flows, printing the deadline left after each step:
//
//  1. http.Server.Shutdown: no new orders; requests in flight finish.
//  2. Consumer.Drain: the consumer works off the orders already accepted,
//     retries included, then closes, and reports what it did with them:
//     acked, returned, dead-lettered, abandoned. (Consumer.Close alone would
//     stop at once and leave them in the in-memory queue, lost when the
//     process exits.)
//  3. Pool.Close: the consumer's handlers were the pool's only submitters.
//
// It then prints the accounting: every accepted order is acked, dead-lettered
// or still in the queue, and the pool's stats, and closes the queue. An
// unclean shutdown (orders left, jobs left unsettled, a step past the
// deadline) exits with status 1.
//
// With no flags the program drives itself: it listens on 127.0.0.1:0, posts
// a few orders from a client loop, then sends SIGTERM to its own process so
// that the real signal path runs. With -serve it waits for a signal:
//
//	go run ./examples/shutdown
//	go run ./examples/shutdown -serve -addr 127.0.0.1:8080
//	curl -i -d '{"id":"a1","card":"4242424242424242","amount_cents":1200}' localhost:8080/orders
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
	"github.com/corral-go/corral/scope"
)

// The service's bounds.
const (
	queueCapacity = 64                     // orders stored and not settled; beyond it POST answers 503
	orderWorkers  = 4                      // orders handled at once (mostly waiting on I/O)
	orderLease    = 5 * time.Second        // a handler running longer is cancelled and its order redelivered
	maxAttempts   = 3                      // attempts per order before it is dead-lettered
	retryDelay    = 50 * time.Millisecond  // wait before a failed order is retried
	renderQueue   = 2 * orderWorkers       // invoices waiting for a render worker
	closeReserve  = 500 * time.Millisecond // end of the deadline kept for Consumer.Close and Pool.Close
	maxBodyBytes  = 4 << 10                // largest order body accepted

	gatewayLatency = 20 * time.Millisecond // the payment gateway's round trip
	mailLatency    = 10 * time.Millisecond // the mail server's round trip
	renderRounds   = 2000                  // SHA-256 rounds that stand in for rendering a PDF

	clientTimeout = 2 * time.Second // per request of the self-driving client
)

// The test cards of the fake payment gateway.
const (
	cardOK       = "4242424242424242" // always charged
	cardDeclined = "4000000000000002" // always declined: a permanent failure
	cardFlaky    = "4000000000000119" // the first attempt times out at the gateway; the retry succeeds
	cardStuck    = "4000000000000000" // the gateway never answers: the charge waits until cancelled
)

type config struct {
	addr  string        // listen address
	serve bool          // wait for a signal instead of driving itself
	grace time.Duration // shutdown deadline, counted from the signal
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:0", "listen address")
	flag.BoolVar(&cfg.serve, "serve", false, "serve until SIGINT or SIGTERM instead of driving itself")
	flag.DurationVar(&cfg.grace, "grace", 5*time.Second, "shutdown deadline, counted from the signal")
	flag.Parse()
	if err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shutdown:", err)
		os.Exit(1)
	}
}

// run serves until SIGINT or SIGTERM (in the self-driving mode, until the
// client sends SIGTERM), then shuts down and prints the report to out. It
// returns an error if the shutdown was not clean.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.grace <= closeReserve {
		return fmt.Errorf("-grace %v: must be longer than %v", cfg.grace, closeReserve)
	}
	out = &lockedWriter{w: out}
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	svc, err := newService()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		svc.abort()
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", svc.postOrder)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 2 * time.Second,
		ReadTimeout:       5 * time.Second,
		WriteTimeout:      5 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    8 << 10,
	}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "listening on %s\n", url)

	// The scope's context ends on the signal, or when a task fails (the
	// server cannot serve, the client cannot reach it): either way the
	// shutdown task runs, and Run returns once every task has. It is started
	// first: a scope cancelled by an early signal starts no task after that,
	// and the shutdown must not be one of those.
	shutDown := false
	err = scope.Run(ctx, func(s *scope.Scope) error {
		s.GoNamed("shutdown", func(ctx context.Context) error {
			<-ctx.Done()
			shutDown = true
			stopSignals() // a second Ctrl-C kills the process at once
			return svc.shutdown(context.Cause(ctx), srv, cfg.grace, out)
		})
		s.GoNamed("http", func(context.Context) error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		if !cfg.serve {
			s.GoNamed("client", func(ctx context.Context) error { return drive(ctx, url, out) })
		}
		return nil
	})
	if !shutDown { // a signal before Run started a task: nothing was served
		_ = ln.Close()
		svc.abort()
	}
	return err
}

// order is the body of POST /orders.
type order struct {
	ID          string `json:"id"` // the client's idempotency key
	Card        string `json:"card"`
	AmountCents int64  `json:"amount_cents"`
}

// reply is the body of a POST /orders answer.
type reply struct {
	ID     string `json:"id"`
	Status string `json:"status"` // "accepted" or "duplicate"
}

type service struct {
	q        *queue.Queue[order]
	consumer *queue.Consumer[order]
	render   *pool.Pool // the CPU step: at most GOMAXPROCS invoices rendered at once

	mu   sync.Mutex // guards sent
	sent int        // invoices mailed
}

func newService() (*service, error) {
	s := &service{render: pool.New(runtime.GOMAXPROCS(0), renderQueue)}
	q, err := queue.New[order](context.Background(),
		queue.WithCapacity(queueCapacity),
		queue.WithOverflow(queue.Reject),
		queue.WithDedupHorizon(time.Hour), // a retried POST within the hour is not charged twice
	)
	if err != nil {
		return nil, err
	}
	s.q = q
	// The consumer's context is not the signal's: cancelling it would cancel
	// running handlers at once. Drain stops the consumer.
	s.consumer, err = q.Consume(context.Background(), s.fulfil,
		queue.WithWorkers(orderWorkers),
		queue.WithLease(orderLease),
		queue.WithMaxAttempts(maxAttempts),
		queue.WithBackoff(backoff.Constant(retryDelay)),
	)
	if err != nil {
		_ = s.render.Close(context.Background())
		_ = q.Close(context.Background())
		return nil, err
	}
	return s, nil
}

// abort stops a service that never served.
func (s *service) abort() {
	_ = s.q.Close(context.Background()) // closes the consumer too
	_ = s.render.Close(context.Background())
}

func (s *service) postOrder(w http.ResponseWriter, r *http.Request) {
	var o order
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		http.Error(w, "bad order: "+err.Error(), http.StatusBadRequest)
		return
	}
	if o.ID == "" || o.Card == "" || o.AmountCents <= 0 {
		http.Error(w, "bad order: id, card and a positive amount_cents are required", http.StatusBadRequest)
		return
	}
	_, err := s.q.Enqueue(r.Context(), o, queue.WithID(o.ID))
	switch {
	case err == nil:
		writeJSON(w, http.StatusAccepted, reply{ID: o.ID, Status: "accepted"})
	case errors.Is(err, queue.ErrDuplicate):
		writeJSON(w, http.StatusOK, reply{ID: o.ID, Status: "duplicate"})
	case errors.Is(err, queue.ErrFull):
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many orders in progress", http.StatusServiceUnavailable)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client went away: nothing to do
}

// fulfil is the consumer's handler: charge, render the invoice on the render
// pool, mail it. An error retries the order (the gateway deduplicates charges
// by the order's ID), a permanent one dead-letters it.
func (s *service) fulfil(ctx context.Context, job queue.Job[order]) error {
	if err := charge(ctx, job.Payload, job.Attempt); err != nil {
		return err
	}
	// The render task runs with ctx: if the handler is cancelled (lease,
	// shutdown), so is its render, queued or running.
	h, err := pool.Call(ctx, s.render, func(ctx context.Context) ([]byte, error) {
		return renderInvoice(ctx, job.Payload)
	})
	if err != nil {
		return err
	}
	pdf, err := h.Wait(ctx)
	if err != nil {
		return err
	}
	if err := mail(ctx, job.Payload, pdf); err != nil {
		return err
	}
	s.mu.Lock()
	s.sent++
	s.mu.Unlock()
	return nil
}

var (
	errDeclined       = errors.New("payment: card declined")
	errGatewayTimeout = errors.New("payment: gateway timeout")
)

// charge stands in for a payment gateway call. A real gateway takes the
// order's ID as its idempotency key, so that a retried order is charged once.
func charge(ctx context.Context, o order, attempt int) error {
	if err := wait(ctx, gatewayLatency); err != nil {
		return err
	}
	switch {
	case o.Card == cardDeclined:
		return retry.Permanent(errDeclined)
	case o.Card == cardFlaky && attempt == 1:
		return errGatewayTimeout
	case o.Card == cardStuck:
		<-ctx.Done()
		return context.Cause(ctx)
	}
	return nil
}

// mail stands in for sending the invoice to the customer.
func mail(ctx context.Context, o order, pdf []byte) error {
	if len(pdf) == 0 {
		return fmt.Errorf("mail: empty invoice for order %s", o.ID)
	}
	return wait(ctx, mailLatency)
}

// renderInvoice is the CPU step.
func renderInvoice(ctx context.Context, o order) ([]byte, error) {
	sum := sha256.Sum256(fmt.Appendf(nil, "invoice %s: %d cents", o.ID, o.AmountCents))
	for i := range renderRounds {
		if i%500 == 0 && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		sum = sha256.Sum256(sum[:])
	}
	return sum[:], nil
}

// wait waits for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// errDeadline is the cause of the shutdown contexts when the deadline passes.
var errDeadline = errors.New("shutdown deadline passed")

// shutdown drains the service within grace and prints what happened. It
// returns an error if the shutdown was not clean.
func (s *service) shutdown(why error, srv *http.Server, grace time.Duration, out io.Writer) error {
	start := time.Now()
	deadline := start.Add(grace)
	ctx, cancel := context.WithDeadlineCause(context.Background(), deadline, errDeadline)
	defer cancel()
	// Steps 1 and 2 end closeReserve before the deadline, so that what
	// Consumer.Drain does when its ctx ends (cancel the handlers and wait
	// for them to return) and Pool.Close still fit in it.
	early, cancelEarly := context.WithDeadlineCause(ctx, deadline.Add(-closeReserve), errDeadline)
	defer cancelEarly()
	left := func() time.Duration { return time.Until(deadline).Round(time.Millisecond) }

	fmt.Fprintf(out, "shutdown: %v; deadline %v\n", why, grace)
	var problems []error

	err := srv.Shutdown(early)
	if err != nil {
		problems = append(problems, fmt.Errorf("http: %w", err))
		err = errors.Join(err, srv.Close()) // cut the connections still open
	}
	fmt.Fprintf(out, "  1. http.Server.Shutdown: %s, %v left\n", outcome(err), left())

	rep, err := s.consumer.Drain(early)
	if err != nil {
		problems = append(problems, fmt.Errorf("consumer: %w", err))
	}
	fmt.Fprintf(out, "  2. Consumer.Drain: %s, acked=%d returned=%d dead-lettered=%d abandoned=%d, %v left\n",
		outcome(err), rep.Acked, rep.Returned, rep.DeadLettered, rep.Abandoned, left())
	if rep.Abandoned > 0 {
		problems = append(problems, fmt.Errorf("%d jobs left unsettled (abandoned)", rep.Abandoned))
	}

	err = s.render.Close(ctx)
	if err != nil {
		problems = append(problems, fmt.Errorf("pool: %w", err))
	}
	fmt.Fprintf(out, "  3. Pool.Close: %s, %v left\n", outcome(err), left())

	if err := s.report(out); err != nil {
		problems = append(problems, err)
	}
	if err := s.q.Close(ctx); err != nil {
		problems = append(problems, fmt.Errorf("queue: %w", err))
	}
	if len(problems) > 0 {
		fmt.Fprintf(out, "UNCLEAN shutdown in %v\n", time.Since(start).Round(time.Millisecond))
		return errors.Join(problems...)
	}
	fmt.Fprintf(out, "clean shutdown in %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}

func outcome(err error) string {
	if err != nil {
		return "FAILED (" + err.Error() + ")"
	}
	return "ok"
}

// report prints the accounting after the shutdown: every accepted order is
// acked, dead-lettered or left in the queue. Orders left in the in-memory
// queue are lost when the process exits, so they make the shutdown unclean.
func (s *service) report(out io.Writer) error {
	ctx := context.Background()
	st, err := s.q.Stats(ctx)
	if err != nil {
		return err
	}
	dead := st.DeadLetteredTotal()
	stored := st.Ready + st.Delayed + st.InFlight
	fmt.Fprintln(out, "report:")
	fmt.Fprintf(out, "  orders: accepted=%d duplicates=%d acked=%d dead-lettered=%d left-in-queue=%d retries=%d\n",
		st.Enqueued, st.Duplicates, st.Acked, dead, stored, st.Retried)
	for dl, err := range s.q.DeadLetters(ctx) {
		if err != nil {
			return err
		}
		last := ""
		if n := len(dl.History); n > 0 {
			last = dl.History[n-1].Error
		}
		fmt.Fprintf(out, "  dead letter %s: %s after %d attempt(s): %s\n", dl.Job.ID, dl.Reason, dl.Job.Attempt, last)
	}
	s.mu.Lock()
	sent := s.sent
	s.mu.Unlock()
	fmt.Fprintf(out, "  invoices mailed: %d\n", sent)
	ps := s.render.Stats()
	fmt.Fprintf(out, "  render pool: submitted=%d completed=%d failed=%d rejected=%d dropped=%d skipped=%d workers=%d\n",
		ps.Submitted, ps.Completed, ps.Failed+ps.Panicked, ps.Rejected, ps.Dropped.Total(), ps.Skipped, ps.Workers)
	if stored > 0 {
		return fmt.Errorf("orders left in the in-memory queue: %d", stored)
	}
	return nil
}

// drive is the self-driving client: it posts demoOrders one at a time, then
// sends SIGTERM to its own process.
func drive(ctx context.Context, url string, out io.Writer) error {
	client := &http.Client{Timeout: clientTimeout}
	defer client.CloseIdleConnections()
	for _, o := range demoOrders {
		status, err := post(ctx, client, url+"/orders", o)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "client: POST /orders %s: %s\n", o.ID, status)
	}
	fmt.Fprintln(out, "client: sending SIGTERM to my own process")
	return syscall.Kill(os.Getpid(), syscall.SIGTERM)
}

// demoOrders are the self-driving client's requests: ord-2 is sent twice,
// ord-4 is declined, ord-7 needs a retry.
var demoOrders = []order{
	{"ord-1", cardOK, 1200},
	{"ord-2", cardOK, 4999},
	{"ord-2", cardOK, 4999},
	{"ord-3", cardOK, 350},
	{"ord-4", cardDeclined, 800},
	{"ord-5", cardOK, 2100},
	{"ord-6", cardOK, 999},
	{"ord-7", cardFlaky, 1500},
	{"ord-8", cardOK, 7300},
}

// post sends o and returns the answer's status code and body status.
func post(ctx context.Context, client *http.Client, url string, o order) (string, error) {
	body, err := json.Marshal(o)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r reply
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted {
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return "", fmt.Errorf("POST %s: %d with a bad body: %w", o.ID, resp.StatusCode, err)
		}
		return fmt.Sprintf("%d %s", resp.StatusCode, r.Status), nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(msg)), nil
}

// lockedWriter serialises writes from the service's goroutines.
type lockedWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
