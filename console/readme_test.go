package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/corral-go/corral/console"
	"github.com/corral-go/corral/internal/readmetest"
	"github.com/corral-go/corral/queue"
)

// The snippet of console/README.md, as written there, with stubs for what it calls; the
// snippet registers on http.DefaultServeMux, which the test replaces for its run.
func TestREADMESnippet(t *testing.T) {
	ctx := context.Background()
	emails, err := queue.New[string](ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer emails.Close(ctx)
	billing, err := queue.New[int](ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer billing.Close(ctx)
	workers := queue.NewShare(4, queue.Weighted)
	mayOperate := func(*http.Request, console.Action) error { return nil }
	var authenticated int
	yourAuth := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			authenticated++
			h.ServeHTTP(w, r)
		})
	}
	defaultMux := http.DefaultServeMux
	http.DefaultServeMux = http.NewServeMux()
	defer func() { http.DefaultServeMux = defaultMux }()

	func() {
		c := console.New([]console.Source{console.Of("emails", emails), console.Of("billing", billing)},
			console.WithShare("workers", workers), // optional: a queue.Share whose split to show
			console.WithAuthorize(func(r *http.Request, a console.Action) error { return mayOperate(r, a) }))
		defer c.Close()
		http.Handle("/ops/", http.StripPrefix("/ops", yourAuth(c)))

		rec := httptest.NewRecorder()
		http.DefaultServeMux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ops/", nil))
		page := rec.Body.String()
		if rec.Code != http.StatusOK || authenticated != 1 ||
			!strings.Contains(page, `data-share="workers"`) || !strings.Contains(page, "billing") {
			t.Errorf("GET /ops/: %d, %d authenticated, share shown %t, billing shown %t; want 200, 1, true, true",
				rec.Code, authenticated, strings.Contains(page, `data-share="workers"`), strings.Contains(page, "billing"))
		}
	}()
}

// README.md's snippets are the ones the tests above run (see internal/readmetest).
func TestREADMEInStep(t *testing.T) {
	readmetest.Check(t, "README.md", []string{"readme_test.go"})
}
