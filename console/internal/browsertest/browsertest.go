// Package browsertest drives the console in a real headless Chromium (Debian's chromium,
// which scripts/test.sh installs) against a queue on any backend, clicking what an operator
// clicks: the console's own tests run it on the in-memory backend, console/internal/brokers on
// JetStream, Postgres and Redis. Every wait is on a DOM condition or a channel, bounded by the
// browser context's timeout.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/corral-go/corral/console"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/retry"
)

// Chromium is the browser the tests drive.
const Chromium = "/usr/bin/chromium"

// Fixture is a queue called mail, on a backend of the test's, served by a console mounted
// under /ops/ on a loopback test server; all closed when the test ends.
type Fixture struct {
	Q   *queue.Queue[string]
	C   *console.Console
	Srv *httptest.Server
}

// NewFixture opens the queue on b (the default in-memory backend if b is nil) with qopts and
// serves it with a console made with opts.
func NewFixture(t *testing.T, b driver.Backend, qopts []queue.Option, opts ...console.Option) *Fixture {
	t.Helper()
	ctx := context.Background()
	if b != nil {
		qopts = append([]queue.Option{queue.WithBackend(b)}, qopts...)
	}
	q, err := queue.New[string](ctx, qopts...)
	if err != nil {
		t.Fatal(err)
	}
	c := console.New([]console.Source{console.Of("mail", q)}, opts...)
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", c))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		c.Close() // ends the event streams, which srv.Close waits for
		srv.Close()
		_ = q.Close(ctx)
	})
	return &Fixture{Q: q, C: c, Srv: srv}
}

// Run runs the operator's scenarios as subtests of t, each on a queue on a new backend that
// open returns (unopened, of a queue of its own): the overview's numbers match Stats; a dead
// letter's page shows its reason and history, and its redrive button makes the job run
// again; pause stops new starts and resume restarts them; cancel of a running job cancels
// its handler with queue.ErrCanceled; a read-only console shows no action, and an action
// without the CSRF token is refused.
func Run(t *testing.T, open func(t *testing.T) driver.Backend) {
	for _, s := range []struct {
		name string
		f    func(*testing.T, func(*testing.T) driver.Backend)
	}{
		{"OverviewMatchesStats", overviewMatchesStats},
		{"DeadLetterAndRedrive", deadLetterAndRedrive},
		{"PauseResume", pauseResume},
		{"CancelRunning", cancelRunning},
		{"ReadOnlyAndCSRF", readOnlyAndCSRF},
	} {
		t.Run(s.name, func(t *testing.T) { s.f(t, open) })
	}
}

// Browser returns a chromedp context on a fresh headless chromium, which accepts every
// confirmation dialog, ended with the test.
func Browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(Chromium); err != nil {
		t.Skipf("no %s (scripts/test.sh installs Debian's chromium): %v", Chromium, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	if err := chromedp.Do(ctx); err != nil {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	// Every confirmation dialog is answered OK, as an operator who means it clicks.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	var answering sync.WaitGroup
	answering.Go(func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	})
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		answering.Wait()
	})
	return ctx
}

// Press clicks the element sel selects once it is visible, as the element's click() does:
// on the element itself, wherever it is, so that a live update that moves the page between
// finding the element and clicking it cannot make the click land beside it.
func Press(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => { document.querySelector(%q).click(); return true; })()`, sel))(ctx, t)
			return err
		}),
	)
}

// Do runs actions in the browser, failing the test with what on an error.
func Do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Cell returns the text of a field of the queue mail's row on the overview.
func Cell(t *testing.T, ctx context.Context, field string) string {
	t.Helper()
	return Text(t, ctx, `tr[data-queue="mail"] [data-field="`+field+`"]`)
}

// Text returns the text of the element sel selects.
func Text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// Eval evaluates expr in the page, awaiting a promise.
func Eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func overviewMatchesStats(t *testing.T, open func(*testing.T) driver.Backend) {
	f := NewFixture(t, open(t), nil)
	ctx := Browser(t)
	bg := context.Background()
	for i := range 3 {
		_, _ = f.Q.Enqueue(bg, "now", queue.WithID(fmt.Sprint("r", i)))
	}
	for i := range 2 {
		_, _ = f.Q.Enqueue(bg, "later", queue.WithID(fmt.Sprint("d", i)), queue.WithDelay(time.Hour))
	}
	if err := f.Q.Cancel(bg, "r0"); err != nil {
		t.Fatal(err)
	}
	Do(t, ctx, "open the overview", chromedp.Navigate(f.Srv.URL+"/ops/"), chromedp.WaitVisible(chromedp.CSS("#queues")))
	s, err := f.Q.Stats(bg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ready": fmt.Sprint(s.Ready), "delayed": fmt.Sprint(s.Delayed), "dead": fmt.Sprint(s.Dead),
		"inFlight": fmt.Sprint(s.InFlight), "enqueued": fmt.Sprint(s.Enqueued), "paused": "running"}
	for field, w := range want {
		if got := Cell(t, ctx, field); got != w {
			t.Errorf("overview %s = %q, Stats says %q", field, got, w)
		}
	}
	if s.Ready != 2 || s.Delayed != 2 || s.Dead != 1 {
		t.Errorf("stats %+v: want 2 ready, 2 delayed, 1 dead", s)
	}
}

func deadLetterAndRedrive(t *testing.T, open func(*testing.T) driver.Backend) {
	dead := make(chan queue.Event, 1)
	f := NewFixture(t, open(t), []queue.Option{queue.WithHooks(queue.Hooks{
		OnDead: func(_ context.Context, e queue.Event) { dead <- e },
	})})
	ctx := Browser(t)
	bg := context.Background()
	ran := make(chan int, 10)
	fail := true
	c, err := f.Q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
		ran <- j.Attempt
		if fail {
			return retry.Permanent(errors.New("card declined"))
		}
		return nil
	}, queue.WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Close(bg) })
	_, _ = f.Q.Enqueue(bg, "order", queue.WithID("order-7"))
	<-ran
	<-dead
	fail = false // the consumer's one worker is idle: the next run sees it
	Do(t, ctx, "open the dead letter",
		chromedp.Navigate(f.Srv.URL+"/ops/queues/mail?state=dead"),
		Press(`tr[data-id="order-7"] a`),
		chromedp.WaitVisible(chromedp.CSS("#history")))
	reason, hist := Text(t, ctx, "#reason"), Text(t, ctx, "#history")
	if reason != "permanent" || !strings.Contains(hist, "card declined") {
		t.Errorf("dead letter page: reason %q, history %q; want permanent and card declined", reason, hist)
	}
	Do(t, ctx, "redrive", Press(`button[data-verb="redrive"]`),
		chromedp.WaitVisible(chromedp.CSS("#message")))
	select {
	case a := <-ran:
		if a != 1 {
			t.Errorf("redriven job ran as attempt %d, want 1", a)
		}
	case <-ctx.Done():
		t.Fatal("the redriven job did not run")
	}
}

func pauseResume(t *testing.T, open func(*testing.T) driver.Backend) {
	f := NewFixture(t, open(t), nil)
	ctx := Browser(t)
	bg := context.Background()
	ran := make(chan string, 10)
	c, err := f.Q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error { ran <- j.ID; return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Close(bg) })
	Do(t, ctx, "pause", chromedp.Navigate(f.Srv.URL+"/ops/"),
		Press(`tr[data-queue="mail"] button[data-verb="pause"]`),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="mail"] button[data-verb="resume"]`)))
	if got := Cell(t, ctx, "paused"); got != "paused" {
		t.Errorf("overview says %q after pause", got)
	}
	_, _ = f.Q.Enqueue(bg, "held", queue.WithID("held"))
	// A pause holds in the process that paused once Pause returned, on every backend: a
	// worker waiting for a job would have taken it at once.
	select {
	case id := <-ran:
		t.Fatalf("job %s started while paused", id)
	case <-time.After(200 * time.Millisecond):
	}
	Do(t, ctx, "resume", Press(`tr[data-queue="mail"] button[data-verb="resume"]`),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="mail"] button[data-verb="pause"]`)))
	select {
	case id := <-ran:
		if id != "held" {
			t.Errorf("ran %s, want held", id)
		}
	case <-ctx.Done():
		t.Fatal("the job did not start after resume")
	}
}

func cancelRunning(t *testing.T, open func(*testing.T) driver.Backend) {
	f := NewFixture(t, open(t), nil)
	ctx := Browser(t)
	bg := context.Background()
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	c, err := f.Q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
		started <- struct{}{}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return context.Cause(ctx)
	}, queue.WithWorkers(1), queue.WithLease(6*time.Second)) // the keeper renews it every 2 s; a cancel reaches the handler at the next renewal
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Close(bg) })
	_, _ = f.Q.Enqueue(bg, "long", queue.WithID("long"))
	<-started
	Do(t, ctx, "cancel the running job", chromedp.Navigate(f.Srv.URL+"/ops/queues/mail/jobs/long"),
		Press(`button[data-verb="cancel"]`), chromedp.WaitVisible(chromedp.CSS("#message")))
	select {
	case err := <-cause:
		if !errors.Is(err, queue.ErrCanceled) {
			t.Errorf("handler's cause %v, want ErrCanceled", err)
		}
	case <-ctx.Done():
		t.Fatal("the handler was not cancelled")
	}
}

func readOnlyAndCSRF(t *testing.T, open func(*testing.T) driver.Backend) {
	ro := NewFixture(t, open(t), nil, console.WithReadOnly())
	ctx := Browser(t)
	Do(t, ctx, "open the read-only overview", chromedp.Navigate(ro.Srv.URL+"/ops/"),
		chromedp.WaitVisible(chromedp.CSS("#queues")))
	buttons := Eval[int](t, ctx, `document.querySelectorAll("button, form[method=post]").length`)
	if buttons != 0 {
		t.Errorf("read-only overview has %d buttons or action forms", buttons)
	}

	f := NewFixture(t, open(t), nil)
	_, _ = f.Q.Enqueue(context.Background(), "x", queue.WithID("x"))
	Do(t, ctx, "open the overview", chromedp.Navigate(f.Srv.URL+"/ops/"), chromedp.WaitVisible(chromedp.CSS("#queues")))
	status := Eval[int](t, ctx, `fetch("queues/mail/actions", {method: "POST", body: new URLSearchParams({verb: "cancel", id: "x"})}).then(r => r.status)`)
	if status != 403 {
		t.Errorf("an action without the CSRF token: %d, want 403", status)
	}
	if n, _ := f.Q.Count(context.Background(), queue.Filter{State: queue.StateReady}); n != 1 {
		t.Errorf("%d ready after the refused cancel, want 1", n)
	}
}
