package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/corral-go/corral/console"
	"github.com/corral-go/corral/queue"
)

// A console mounted under /ops/, its actions authorized by the application's own hook, on a
// loopback server.
func ExampleNew() {
	ctx := context.Background()
	emails, _ := queue.New[string](ctx)
	defer emails.Close(ctx)
	_, _ = emails.Enqueue(ctx, "welcome", queue.WithID("mail-1"))

	c := console.New([]console.Source{console.Of("emails", emails)},
		console.WithAuthorize(func(r *http.Request, a console.Action) error {
			return nil // look at r's user (set by your middleware) and a.Verb here
		}))
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", c))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer c.Close() // first: it ends the event streams that srv.Close waits for

	res, err := srv.Client().Get(srv.URL + "/ops/queues/emails/jobs/mail-1")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	fmt.Println(res.Status, strings.Contains(string(page), `<dd id="state">ready</dd>`))
	// Output: 200 OK true
}

// A Share's split on the overview: each consumer that shares its workers has a row, with its
// workers, jobs in flight and waiting, and the jobs it started.
func ExampleWithShare() {
	ctx := context.Background()
	emails, _ := queue.New[string](ctx, queue.WithTimings()) // timed: the overview shows its percentiles
	defer emails.Close(ctx)
	workers := queue.NewShare(4, queue.Weighted)
	consumer, _ := emails.Consume(ctx, func(context.Context, queue.Job[string]) error { return nil },
		queue.WithShare(workers, "emails", 1), queue.WithWorkers(2))
	defer consumer.Close(ctx)

	c := console.New([]console.Source{console.Of("emails", emails)}, console.WithShare("workers", workers))
	defer c.Close()
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	page := rec.Body.String()
	fmt.Println(strings.Contains(page, `<tr data-share="workers" data-member="emails">`),
		strings.Contains(page, `<td data-field="workers">2</td>`))
	// Output: true true
}
