// Command fanout fetches the users of 100 organisations from an HTTP API that
// is sometimes slow and sometimes failing, the way a real dependency is.
//
// What it bounds and why:
//   - at most 8 requests in flight (scope.WithLimit): the API is not flooded;
//   - 1s per attempt (retry.WithAttemptTimeout): a slow response does not hold
//     a slot forever;
//   - at most 3 attempts per organisation, with jittered exponential backoff,
//     and a retry budget shared by all of them (retry.Budget): a failing API
//     sees at most a bounded extra load, never a retry storm;
//   - 404 is permanent (retry.Permanent): it is not retried at all.
//
// No failure is lost: the scope runs under the Supervise joiner, so one
// failing organisation does not cancel the others, Map returns an error that
// holds every failure, and scope.Errors lists them, one per organisation.
//
//	go run ./examples/fanout
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/retry"
	"github.com/corral-go/corral/scope"
)

const (
	orgs           = 100
	concurrency    = 8
	attemptTimeout = time.Second
	maxAttempts    = 3
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

// flakyAPI serves /orgs/{id}/users. Its faults are fixed per organisation so
// that every run tells the same story:
//   - id%10 == 3: 503 on the first call, then fine (a transient error);
//   - id%20 == 11: the first call hangs until the client gives up;
//   - id%25 == 7: always 500 (a broken shard);
//   - id == 99: 404 (no such organisation).
type flakyAPI struct {
	mu    sync.Mutex // guards calls
	calls map[int]int
}

func (a *flakyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		http.Error(w, "bad id", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.calls[id]++
	n := a.calls[id]
	a.mu.Unlock()

	switch {
	case id == 99:
		http.Error(w, "no such organisation", http.StatusNotFound)
		return
	case id%25 == 7:
		http.Error(w, "shard unavailable", http.StatusInternalServerError)
		return
	case id%10 == 3 && n == 1:
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	case id%20 == 11 && n == 1:
		<-r.Context().Done() // the client gave up
		return
	}
	users := []string{fmt.Sprintf("admin@org%d", id), fmt.Sprintf("dev@org%d", id)}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(users)
}

func (a *flakyAPI) totalCalls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	total := 0
	for _, n := range a.calls {
		total += n
	}
	return total
}

// orgError is the failure of one organisation's fetch.
type orgError struct {
	id  int
	err error // a *retry.Error
}

func (e *orgError) Error() string { return fmt.Sprintf("org %d: %v", e.id, e.err) }
func (e *orgError) Unwrap() error { return e.err }

// statusError is a non-2xx answer.
type statusError struct{ code int }

func (e *statusError) Error() string { return "HTTP " + strconv.Itoa(e.code) }

func fetchUsers(ctx context.Context, client *http.Client, base string, id int) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/orgs/%d/users", base, id), nil)
	if err != nil {
		return nil, retry.Permanent(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err // transport errors and attempt timeouts are retried
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		err := &statusError{resp.StatusCode}
		if resp.StatusCode < 500 {
			return nil, retry.Permanent(err) // the request is wrong: retrying cannot help
		}
		return nil, err
	}
	var users []string
	if err := json.NewDecoder(resp.Body).Decode(&users); err != nil {
		return nil, retry.Permanent(err)
	}
	return users, nil
}

func run(ctx context.Context, out io.Writer) error {
	api := &flakyAPI{calls: make(map[int]int)}
	mux := http.NewServeMux()
	mux.Handle("GET /orgs/{id}/users", api)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := srv.Client()

	budget := retry.NewBudget(0.2, 50) // retries <= 20% of successes, plus 50/s
	policy := retry.New(
		retry.WithMaxAttempts(maxAttempts),
		retry.WithAttemptTimeout(attemptTimeout),
		retry.WithBackoff(backoff.Exponential(5*time.Millisecond, 2, 50*time.Millisecond, backoff.WithJitter(backoff.FullJitter))),
		retry.WithBudget(budget),
	)

	ids := make([]int, orgs)
	for i := range ids {
		ids[i] = i
	}
	latencies := make([]time.Duration, orgs) // each task writes only its own element
	start := time.Now()
	results, err := scope.Map(ctx, ids, func(ctx context.Context, id int) ([]string, error) {
		t0 := time.Now()
		defer func() { latencies[id] = time.Since(t0) }()
		users, err := retry.DoValue(ctx, policy, func(ctx context.Context) ([]string, error) {
			return fetchUsers(ctx, client, srv.URL, id)
		})
		if err != nil {
			return nil, &orgError{id: id, err: err}
		}
		return users, nil
	}, scope.WithLimit(concurrency), scope.WithJoiner(scope.Supervise))
	elapsed := time.Since(start)

	ok, users := 0, 0
	for _, r := range results {
		if r != nil {
			ok++
			users += len(r)
		}
	}
	failures := orgErrors(err)
	fmt.Fprintf(out, "fetched %d organisations in %v: %d ok (%d users), %d failed\n",
		orgs, elapsed.Round(10*time.Millisecond), ok, users, len(failures))
	fmt.Fprintf(out, "API calls: %d for %d organisations (retries bounded by attempts and budget)\n",
		api.totalCalls(), orgs)
	for _, f := range failures {
		fmt.Fprintf(out, "  failed: %s\n", describe(f))
	}
	slices.Sort(latencies)
	fmt.Fprintf(out, "latency per organisation: p50 %v, p95 %v, max %v\n",
		pct(latencies, 50), pct(latencies, 95), pct(latencies, 100))
	if ok+len(failures) != orgs {
		return fmt.Errorf("%d ok + %d failed != %d: a result was lost", ok, len(failures), orgs)
	}
	return nil
}

// orgErrors lists the failures held by the error of Map, by organisation.
func orgErrors(err error) []*orgError {
	var out []*orgError
	for _, e := range scope.Errors(err) { // each failure once, whether there are 0, 1 or 100
		var oe *orgError
		if !errors.As(e, &oe) {
			oe = &orgError{id: -1, err: e} // not an organisation's failure: show it as is
		}
		out = append(out, oe)
	}
	slices.SortFunc(out, func(a, b *orgError) int { return a.id - b.id })
	return out
}

// describe says why an organisation failed, from the retry outcome.
func describe(e *orgError) string {
	var re *retry.Error
	if !errors.As(e.err, &re) {
		return e.Error()
	}
	reason := "gave up"
	switch {
	case errors.Is(re, retry.ErrPermanent):
		reason = "not retried (permanent)"
	case errors.Is(re, retry.ErrMaxAttempts):
		reason = fmt.Sprintf("gave up after %d attempts", re.Attempts)
	case errors.Is(re, retry.ErrBudgetExhausted):
		reason = "retry budget exhausted"
	}
	return fmt.Sprintf("org %d: %s, last error %v", e.id, reason, re.Last())
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)-1)*p/100].Round(10 * time.Microsecond)
}
