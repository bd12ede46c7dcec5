package console_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/corral-go/corral/console"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/retry"
)

// The browser tests drive Debian's chromium (scripts/test.sh installs it) headless against the
// console on 127.0.0.1, clicking what an operator clicks and answering the confirmation
// dialogs. They wait on DOM conditions, each bounded by the test's context.

const chromium = "/usr/bin/chromium"

// browser returns a chromedp context on a fresh headless chromium, which accepts every
// confirmation dialog, ended with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no %s (scripts/test.sh installs Debian's chromium): %v", chromium, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
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

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// cell returns the text of a field of the queue mail's row on the overview.
func cell(t *testing.T, ctx context.Context, field string) string {
	t.Helper()
	return text(t, ctx, `tr[data-queue="mail"] [data-field="`+field+`"]`)
}

// text returns the text of the element sel selects.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func TestBrowserOverviewMatchesStats(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	bg := context.Background()
	for i := range 3 {
		_, _ = f.q.Enqueue(bg, "now", queue.WithID(fmt.Sprint("r", i)))
	}
	for i := range 2 {
		_, _ = f.q.Enqueue(bg, "later", queue.WithID(fmt.Sprint("d", i)), queue.WithDelay(time.Hour))
	}
	if err := f.q.Cancel(bg, "r0"); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "open the overview", chromedp.Navigate(f.srv.URL+"/ops/"), chromedp.WaitVisible(chromedp.CSS("#queues")))
	s, err := f.q.Stats(bg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ready": fmt.Sprint(s.Ready), "delayed": fmt.Sprint(s.Delayed), "dead": fmt.Sprint(s.Dead),
		"inFlight": fmt.Sprint(s.InFlight), "enqueued": fmt.Sprint(s.Enqueued), "paused": "running"}
	for field, w := range want {
		if got := cell(t, ctx, field); got != w {
			t.Errorf("overview %s = %q, Stats says %q", field, got, w)
		}
	}
	if s.Ready != 2 || s.Delayed != 2 || s.Dead != 1 {
		t.Errorf("stats %+v: want 2 ready, 2 delayed, 1 dead", s)
	}
}

func TestBrowserDeadLetterAndRedrive(t *testing.T) {
	dead := make(chan queue.Event, 1)
	f := newFixtureQ(t, []queue.Option{queue.WithHooks(queue.Hooks{
		OnDead: func(_ context.Context, e queue.Event) { dead <- e },
	})})
	ctx := browser(t)
	bg := context.Background()
	ran := make(chan int, 10)
	fail := true
	c, err := f.q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
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
	_, _ = f.q.Enqueue(bg, "order", queue.WithID("order-7"))
	<-ran
	<-dead
	fail = false // the consumer's one worker is idle: the next run sees it
	run(t, ctx, "open the dead letter",
		chromedp.Navigate(f.srv.URL+"/ops/queues/mail?state=dead"),
		chromedp.Click(chromedp.CSS(`tr[data-id="order-7"] a`)),
		chromedp.WaitVisible(chromedp.CSS("#history")))
	reason, hist := text(t, ctx, "#reason"), text(t, ctx, "#history")
	if reason != "permanent" || !strings.Contains(hist, "card declined") {
		t.Errorf("dead letter page: reason %q, history %q; want permanent and card declined", reason, hist)
	}
	run(t, ctx, "redrive", chromedp.Click(chromedp.CSS(`button[data-verb="redrive"]`)),
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

func TestBrowserPauseResume(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	bg := context.Background()
	ran := make(chan string, 10)
	c, err := f.q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error { ran <- j.ID; return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Close(bg) })
	run(t, ctx, "pause", chromedp.Navigate(f.srv.URL+"/ops/"),
		chromedp.Click(chromedp.CSS(`tr[data-queue="mail"] button[data-verb="pause"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="mail"] button[data-verb="resume"]`)))
	if got := cell(t, ctx, "paused"); got != "paused" {
		t.Errorf("overview says %q after pause", got)
	}
	_, _ = f.q.Enqueue(bg, "held", queue.WithID("held"))
	// The in-memory backend's pause holds once Pause returned: a worker waiting for a job
	// would have taken it at once.
	select {
	case id := <-ran:
		t.Fatalf("job %s started while paused", id)
	case <-time.After(200 * time.Millisecond):
	}
	run(t, ctx, "resume", chromedp.Click(chromedp.CSS(`tr[data-queue="mail"] button[data-verb="resume"]`)),
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

func TestBrowserCancelRunning(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	bg := context.Background()
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	c, err := f.q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
		started <- struct{}{}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return context.Cause(ctx)
	}, queue.WithWorkers(1), queue.WithLease(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Close(bg) })
	_, _ = f.q.Enqueue(bg, "long", queue.WithID("long"))
	<-started
	run(t, ctx, "cancel the running job", chromedp.Navigate(f.srv.URL+"/ops/queues/mail/jobs/long"),
		chromedp.Click(chromedp.CSS(`button[data-verb="cancel"]`)), chromedp.WaitVisible(chromedp.CSS("#message")))
	select {
	case err := <-cause:
		if !errors.Is(err, queue.ErrCanceled) {
			t.Errorf("handler's cause %v, want ErrCanceled", err)
		}
	case <-ctx.Done():
		t.Fatal("the handler was not cancelled")
	}
}

func TestBrowserReadOnlyAndCSRF(t *testing.T) {
	ro := newFixture(t, console.WithReadOnly())
	ctx := browser(t)
	run(t, ctx, "open the read-only overview", chromedp.Navigate(ro.srv.URL+"/ops/"),
		chromedp.WaitVisible(chromedp.CSS("#queues")))
	buttons := eval[int](t, ctx, `document.querySelectorAll("button, form[method=post]").length`)
	if buttons != 0 {
		t.Errorf("read-only overview has %d buttons or action forms", buttons)
	}

	f := newFixture(t)
	_, _ = f.q.Enqueue(context.Background(), "x", queue.WithID("x"))
	run(t, ctx, "open the overview", chromedp.Navigate(f.srv.URL+"/ops/"), chromedp.WaitVisible(chromedp.CSS("#queues")))
	status := eval[int](t, ctx, `fetch("queues/mail/actions", {method: "POST", body: new URLSearchParams({verb: "cancel", id: "x"})}).then(r => r.status)`)
	if status != 403 {
		t.Errorf("an action without the CSRF token: %d, want 403", status)
	}
	if n, _ := f.q.Count(context.Background(), queue.Filter{State: queue.StateReady}); n != 1 {
		t.Errorf("%d ready after the refused cancel, want 1", n)
	}
}

// eval evaluates expr in the page, awaiting a promise.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// TestBrowserOverviewTimingsAndShare: the overview shows a timed queue's wait and run time
// percentiles and its Share's split as Stats and Share.Stats give them, once the live updates
// have seen the last job settled.
func TestBrowserOverviewTimingsAndShare(t *testing.T) {
	sh := queue.NewShare(4, queue.Weighted)
	f := newFixtureQ(t, []queue.Option{queue.WithTimings()}, console.WithShare("web", sh),
		console.WithInterval(50*time.Millisecond))
	ctx := browser(t)
	bg := context.Background()
	ran := make(chan struct{}, 5)
	c, err := f.q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
		ran <- struct{}{}
		return nil
	}, queue.WithShare(sh, "mail", 3), queue.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Close(bg) })
	for i := range 5 {
		_, _ = f.q.Enqueue(bg, "hi", queue.WithID(fmt.Sprint("m", i)))
	}
	for range 5 {
		<-ran
	}
	member := `tr[data-share="web"][data-member="mail"] [data-field="%s"]`
	run(t, ctx, "open the overview", chromedp.Navigate(f.srv.URL+"/ops/"), chromedp.WaitVisible(chromedp.CSS("#timings")))
	// The last job's run is recorded before it is settled and its slot given back: wait for
	// the page to show the five runs and no slot held.
	settled := fmt.Sprintf(`new Promise((ok) => {
		const text = (sel) => (document.querySelector(sel) || {}).textContent;
		const done = () => text(%q) === "5" && text(%q) === "0" && text(%q) === "0" && text(%q) === "5";
		const poll = () => done() ? ok(true) : setTimeout(poll, 20);
		poll();
	})`, `tr[data-queue="mail"] [data-field="runs"]`, fmt.Sprintf(member, "running"),
		fmt.Sprintf(member, "waiting"), fmt.Sprintf(member, "started"))
	if !eval[bool](t, ctx, settled) {
		t.Fatal("the overview never showed the five runs settled")
	}
	s, err := f.q.Stats(bg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"runs": fmt.Sprint(s.Run.Count), "acked": fmt.Sprint(s.Acked),
		"reachable": "reachable", "paused": "running"}
	for _, p := range []struct {
		name string
		q    float64
	}{{"P50", 0.5}, {"P95", 0.95}, {"P99", 0.99}} {
		want["wait"+p.name] = console.Short(s.Wait.Quantile(p.q))
		want["run"+p.name] = console.Short(s.Run.Quantile(p.q))
	}
	for field, w := range want {
		if got := cell(t, ctx, field); got != w {
			t.Errorf("overview %s = %q, Stats says %q", field, got, w)
		}
	}
	members, err := sh.Stats(bg)
	if err != nil || len(members) != 1 {
		t.Fatalf("Share.Stats: %+v, %v; want one member", members, err)
	}
	m := members[0]
	for field, w := range map[string]string{"weight": "3", "workers": fmt.Sprint(m.Cap), "running": fmt.Sprint(m.Running),
		"waiting": fmt.Sprint(m.Waiting), "started": fmt.Sprint(m.Turns), "share": "100.0%"} {
		if got := text(t, ctx, fmt.Sprintf(member, field)); got != w {
			t.Errorf("share member %s = %q, Share.Stats says %q", field, got, w)
		}
	}
	if s.Acked != 5 || m.Turns != 5 || m.Cap != 2 {
		t.Errorf("acked %d, turns %d, cap %d; want 5, 5, 2", s.Acked, m.Turns, m.Cap)
	}
}
