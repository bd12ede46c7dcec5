// Command ops runs two timed queues with steady traffic, retries and dead letters, their
// consumers sharing one Share of workers, and serves the corral console for them, so that you
// can see it work:
//
//	go run ./console/examples/ops            # then open http://127.0.0.1:8080/ops/
//	go run ./console/examples/ops -addr 127.0.0.1:9000
//
// It stops on Ctrl-C, closing what it started in order: the server, the console, the
// producers, the consumers and the queues.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/console"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// Email is the payload of the emails queue.
type Email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// Invoice is the payload of the billing queue.
type Invoice struct {
	Customer string `json:"customer"`
	Cents    int    `json:"cents"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the address to serve the console on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("console on http://%s/ops/ (Ctrl-C to stop)\n", ln.Addr())
	if err := run(ctx, ln); err != nil {
		log.Fatal(err)
	}
}

// run serves the console on ln, with traffic, until ctx ends.
func run(ctx context.Context, ln net.Listener) error {
	emails, err := queue.New[Email](ctx, queue.WithTimings())
	if err != nil {
		return err
	}
	defer emails.Close(context.Background())
	billing, err := queue.New[Invoice](ctx, queue.WithTimings())
	if err != nil {
		return err
	}
	defer billing.Close(context.Background())

	// Five workers shared by the two consumers, three turns to emails for one to billing.
	sh := queue.NewShare(5, queue.Weighted)
	// Handlers that fail now and then: a retry, or a dead letter.
	ec, err := emails.Consume(ctx, func(ctx context.Context, j queue.Job[Email]) error {
		return work(ctx, 50*time.Millisecond, 0.2, 0.03)
	}, queue.WithShare(sh, "emails", 3), queue.WithWorkers(4), queue.WithMaxAttempts(3), queue.WithBackoff(backoff.Constant(500*time.Millisecond)))
	if err != nil {
		return err
	}
	bc, err := billing.Consume(ctx, func(ctx context.Context, j queue.Job[Invoice]) error {
		return work(ctx, 2*time.Second, 0.1, 0.05) // slow: cancel one from its page
	}, queue.WithShare(sh, "billing", 1), queue.WithWorkers(2),
		queue.WithLease(5*time.Second))
	if err != nil {
		return err
	}

	c := console.New([]console.Source{console.Of("emails", emails), console.Of("billing", billing)},
		console.WithShare("workers", sh))
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", c))
	mux.Handle("/{$}", http.RedirectHandler("/ops/", http.StatusFound))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	var wg sync.WaitGroup
	wg.Go(func() {
		produce(ctx, 100*time.Millisecond, func(n int) error {
			_, err := emails.Enqueue(ctx, Email{To: fmt.Sprintf("user%d@example.com", n), Subject: "hello"})
			return err
		})
	})
	wg.Go(func() {
		produce(ctx, time.Second, func(n int) error {
			_, err := billing.Enqueue(ctx, Invoice{Customer: fmt.Sprint("c", n%7), Cents: 100 * n}, queue.WithKey(fmt.Sprint("c", n%7)))
			return err
		})
	})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Close() // ends the event streams, which Shutdown would wait for
	err = srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	wg.Wait()
	_, e1 := ec.Close(sctx)
	_, e2 := bc.Close(sctx)
	return errors.Join(err, e1, e2)
}

// produce calls enqueue every d with a running number, until ctx ends.
func produce(ctx context.Context, d time.Duration, enqueue func(n int) error) {
	t := time.NewTicker(d)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := enqueue(n); err != nil && ctx.Err() == nil {
			log.Print(err)
		}
	}
}

// work takes about d, then fails with probability fail (a retry) or poison (a permanent
// failure: a dead letter right away).
func work(ctx context.Context, d time.Duration, fail, poison float64) error {
	t := time.NewTimer(time.Duration(rand.Int64N(int64(2 * d))))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
	}
	switch r := rand.Float64(); {
	case r < poison:
		return retry.Permanent(errors.New("invalid address: mailbox does not exist"))
	case r < poison+fail:
		return errors.New("upstream timed out")
	}
	return nil
}
