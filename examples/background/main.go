// Command background shows follow-up work that belongs to a request.
//
// A checkout handler answers the client and runs two follow-ups (send the
// receipt, record analytics) inside a scope. The scope is derived from the
// request's context, so when the client goes away the follow-ups are cancelled
// with a cause, and the handler does not return until both have returned: no
// goroutine outlives the request that started it.
//
// That is right for work that is worth doing only while the request lasts
// (analytics, a cache warm-up). It is wrong for work that must happen once the
// order is accepted: here the client's hang-up cancels the receipt of an order
// the service already accepted. Work that must survive the request (and a
// crash, or a deploy) belongs in a queue: enqueue a job with the order's ID
// before answering, and let a consumer send the receipt, with retries and a
// dead letter if it never can (see examples/jobs and the queue package).
//
//	go run ./examples/background
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/corral-go/corral/scope"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "background:", err)
		os.Exit(1)
	}
}

// followUps is the service's record of what each follow-up did, so the demo
// can print it once the handler has returned.
type followUps struct {
	mu  sync.Mutex // guards log
	log []string
}

func (f *followUps) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, fmt.Sprintf(format, args...))
}

func (f *followUps) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.log
	f.log = nil
	return l
}

// checkout returns the handler. started is closed when both follow-ups run,
// so the demo can cancel the request at a known point; handlerDone receives
// the scope's error when the handler returns.
func checkout(f *followUps, started func(), handlerDone chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		order := r.URL.Query().Get("order")
		err := scope.Run(r.Context(), func(s *scope.Scope) error {
			var ready sync.WaitGroup
			ready.Add(2)
			s.GoNamed("receipt", func(ctx context.Context) error {
				ready.Done()
				return slowStep(ctx, f, "receipt for "+order)
			})
			s.GoNamed("analytics", func(ctx context.Context) error {
				ready.Done()
				return slowStep(ctx, f, "analytics for "+order)
			})
			ready.Wait()
			// The response is written while the follow-ups run.
			fmt.Fprintf(w, "order %s accepted\n", order)
			w.(http.Flusher).Flush()
			started()
			return nil
		}, scope.WithTimeout(2*time.Second)) // a bound even if the client never leaves
		handlerDone <- err
	}
}

// slowStep stands for a call to another service that takes a while: it
// finishes after a second unless its context ends first.
func slowStep(ctx context.Context, f *followUps, what string) error {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-t.C:
		f.add("%s: sent", what)
		return nil
	case <-ctx.Done():
		f.add("%s: cancelled (%v)", what, context.Cause(ctx))
		return ctx.Err()
	}
}

func run(ctx context.Context, out io.Writer) error {
	var f followUps
	startedCh := make(chan struct{}, 1)
	handlerDone := make(chan error, 1)
	srv := httptest.NewServer(checkout(&f, func() { startedCh <- struct{}{} }, handlerDone))
	defer srv.Close()

	// The client asks for a checkout, reads the answer, and hangs up while the
	// follow-ups are still running.
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, srv.URL+"/checkout?order=A-17", nil)
	if err != nil {
		return err
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return err
	}
	line := make([]byte, len("order A-17 accepted\n"))
	if _, err := io.ReadFull(resp.Body, line); err != nil {
		return err
	}
	fmt.Fprintf(out, "client got: %s", line)
	<-startedCh
	fmt.Fprintln(out, "client hangs up while the receipt and analytics are in flight")
	cancel()
	resp.Body.Close()

	// The handler's scope returns only after both follow-ups have returned.
	// Its error is the request's cancellation, not a failure of a follow-up:
	// their ctx.Err() returns are echoes of that cancellation.
	err = <-handlerDone
	fmt.Fprintf(out, "handler returned after its follow-ups; scope error: %v\n", err)
	logs := f.take()
	slices.Sort(logs) // the follow-ups ran concurrently
	for _, l := range logs {
		fmt.Fprintln(out, " ", l)
	}
	fmt.Fprintln(out, "the receipt of an accepted order was cancelled with the request:")
	fmt.Fprintln(out, "work that must survive the request belongs in a queue (see examples/jobs)")
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("scope error %v, want the request's cancellation", err)
	}
	return nil
}
