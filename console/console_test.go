package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/console"
	"github.com/corral-go/corral/console/internal/browsertest"
	"github.com/corral-go/corral/queue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a queue of strings served by a console under /ops/ on a loopback server.
type fixture struct {
	q   *queue.Queue[string]
	c   *console.Console
	srv *httptest.Server
}

func newFixture(t *testing.T, opts ...console.Option) *fixture {
	t.Helper()
	return newFixtureQ(t, nil, opts...)
}

// newFixtureQ is newFixture with the queue's options qopts.
func newFixtureQ(t *testing.T, qopts []queue.Option, opts ...console.Option) *fixture {
	t.Helper()
	f := browsertest.NewFixture(t, nil, qopts, opts...)
	return &fixture{q: f.Q, c: f.C, srv: f.Srv}
}

// get fetches path and returns the body and the CSRF cookie set.
func (f *fixture) get(t *testing.T, path string) (string, *http.Cookie) {
	t.Helper()
	res, err := f.srv.Client().Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, res.Status, b)
	}
	var ck *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "corral_console_csrf" {
			ck = c
		}
	}
	return string(b), ck
}

// post posts form with cookie (if not nil) and returns the status.
func (f *fixture) post(t *testing.T, path string, form url.Values, ck *http.Cookie) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if ck != nil {
		req.AddCookie(ck)
	}
	cl := *f.srv.Client()
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestActionNeedsCSRF(t *testing.T) {
	f := newFixture(t)
	_, ck := f.get(t, "/ops/")
	if ck == nil || ck.Path != "/ops/" {
		t.Fatalf("CSRF cookie %+v, want one for /ops/", ck)
	}
	pause := url.Values{"verb": {"pause"}}
	if code := f.post(t, "/ops/queues/mail/actions", pause, ck); code != http.StatusForbidden {
		t.Errorf("pause without the form's token: %d, want 403", code)
	}
	pause.Set("csrf", ck.Value)
	if code := f.post(t, "/ops/queues/mail/actions", pause, nil); code != http.StatusForbidden {
		t.Errorf("pause without the cookie: %d, want 403", code)
	}
	if s, _ := f.q.Stats(context.Background()); s.Paused {
		t.Fatal("a refused action paused the queue")
	}
	if code := f.post(t, "/ops/queues/mail/actions", pause, ck); code != http.StatusSeeOther {
		t.Errorf("pause with the token: %d, want 303", code)
	}
	if s, _ := f.q.Stats(context.Background()); !s.Paused {
		t.Error("pause with the token did not pause the queue")
	}
}

func TestReadOnly(t *testing.T) {
	f := newFixture(t, console.WithReadOnly())
	id, _ := f.q.Enqueue(context.Background(), "hi")
	for _, path := range []string{"/ops/", "/ops/queues/mail?state=ready", "/ops/queues/mail/jobs/" + id} {
		body, _ := f.get(t, path)
		if strings.Contains(body, `method="post"`) || strings.Contains(body, "data-verb") {
			t.Errorf("read-only page %s shows an action", path)
		}
	}
	_, ck := f.get(t, "/ops/")
	form := url.Values{"verb": {"cancel"}, "id": {id}, "csrf": {ck.Value}}
	if code := f.post(t, "/ops/queues/mail/actions", form, ck); code != http.StatusForbidden {
		t.Errorf("cancel on a read-only console: %d, want 403", code)
	}
	if n, _ := f.q.Count(context.Background(), queue.Filter{State: queue.StateReady}); n != 1 {
		t.Errorf("%d ready after a refused cancel, want 1", n)
	}
}

func TestAuthorizeEveryAction(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []console.Action
	)
	f := newFixture(t, console.WithAuthorize(func(r *http.Request, a console.Action) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, a)
		if a.Verb == "purge-all" {
			return errNo
		}
		return nil
	}))
	id, _ := f.q.Enqueue(context.Background(), "hi")
	_, ck := f.get(t, "/ops/")
	post := func(v url.Values) int { v.Set("csrf", ck.Value); return f.post(t, "/ops/queues/mail/actions", v, ck) }
	if code := post(url.Values{"verb": {"cancel"}, "id": {id}}); code != http.StatusSeeOther {
		t.Errorf("cancel: %d, want 303", code)
	}
	if code := post(url.Values{"verb": {"purge-all"}, "state": {"dead"}}); code != http.StatusForbidden {
		t.Errorf("purge-all refused by the hook: %d, want 403", code)
	}
	if n, _ := f.q.Count(context.Background(), queue.Filter{State: queue.StateDead}); n != 1 {
		t.Errorf("%d dead letters, want 1 (cancelled, not purged)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []console.Action{{Verb: "cancel", Queue: "mail", ID: id}, {Verb: "purge-all", Queue: "mail"}}
	if len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Errorf("hook saw %+v, want %+v", seen, want)
	}
}

var errNo = &refusal{}

type refusal struct{}

func (*refusal) Error() string { return "not you" }

func TestMountedUnderPrefix(t *testing.T) {
	f := newFixture(t)
	body, _ := f.get(t, "/ops/queues/mail?state=dead")
	if !strings.Contains(body, `<base href="/ops/">`) {
		t.Errorf("page under /ops/ lacks <base href=\"/ops/\">")
	}
	js, _ := f.get(t, "/ops/static/console.js")
	if !strings.Contains(js, "EventSource") {
		t.Error("the script under /ops/static/ is not the console's")
	}
}

// TestAwkwardIDs: a job whose ID holds '/', '?', '#' and a space has a working page and
// actions: its links escape it.
func TestAwkwardIDs(t *testing.T) {
	f := newFixture(t)
	const id = "a/b?c#d e"
	if _, err := f.q.Enqueue(context.Background(), "x", queue.WithID(id)); err != nil {
		t.Fatal(err)
	}
	list, ck := f.get(t, "/ops/queues/mail?state=ready")
	esc := url.PathEscape(id)
	if !strings.Contains(list, `href="queues/mail/jobs/`+esc+`"`) {
		t.Fatalf("the list does not link to %s", esc)
	}
	page, _ := f.get(t, "/ops/queues/mail/jobs/"+esc)
	if !strings.Contains(page, `<dd id="state">ready</dd>`) {
		t.Errorf("job page of %q does not show it ready", id)
	}
	form := url.Values{"verb": {"cancel"}, "id": {id}, "csrf": {ck.Value}, "back": {"queues/mail/jobs/" + esc}}
	if code := f.post(t, "/ops/queues/mail/actions", form, ck); code != http.StatusSeeOther {
		t.Errorf("cancel of %q: %d, want 303", id, code)
	}
	if ji, err := f.q.Inspect(context.Background(), id); err != nil || ji.State != queue.StateDead {
		t.Errorf("after cancel: %+v, %v; want dead", ji, err)
	}
}
