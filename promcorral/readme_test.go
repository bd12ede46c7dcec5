package promcorral_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/corral-go/corral/internal/readmetest"
	"github.com/corral-go/corral/pool"
	"github.com/corral-go/corral/promcorral"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// The snippet of promcorral/README.md, as written there; /metrics then serves every source.
func TestREADMESnippet(t *testing.T) {
	ctx := context.Background()
	mux := http.NewServeMux()

	p := pool.New(8, 1024, pool.WithName("thumbnails"), pool.WithTimings())
	q, _ := queue.New[string](ctx, queue.WithName("emails"), queue.WithTimings())
	budget := retry.NewBudget(0.1, 10)

	reg := prometheus.NewRegistry()
	reg.MustRegister(promcorral.New(
		promcorral.WithPool("thumbnails", p),
		promcorral.WithQueue("emails", q),
		promcorral.WithBudget("billing-api", budget),
	))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	defer q.Close(ctx)
	defer p.Close(ctx)
	if _, err := q.Enqueue(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`corral_pool_tasks_submitted_total{pool="thumbnails"} 0`,
		`corral_queue_jobs{queue="emails",state="ready"} 1`,
		`corral_queue_jobs_enqueued_total{queue="emails"} 1`,
		`corral_retry_budget_tokens{budget="billing-api"} 100`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}

// README.md's snippets are the ones the tests above run (see internal/readmetest).
func TestREADMEInStep(t *testing.T) {
	readmetest.Check(t, "README.md", []string{"readme_test.go"})
}
