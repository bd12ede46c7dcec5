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
