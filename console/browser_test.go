package console_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/corral-go/corral/console"
	"github.com/corral-go/corral/console/internal/browsertest"
	"github.com/corral-go/corral/queue"
)

// The operator's browser scenarios run in console/internal/browsertest's own tests (in memory)
// and in console/internal/brokers (JetStream, Postgres, Redis); this one needs a Share.

// TestBrowserOverviewTimingsAndShare: the overview shows a timed queue's wait and run time
// percentiles and its Share's split as Stats and Share.Stats give them, once the live updates
// have seen the last job settled.
func TestBrowserOverviewTimingsAndShare(t *testing.T) {
	sh := queue.NewShare(4, queue.Weighted)
	f := browsertest.NewFixture(t, nil, []queue.Option{queue.WithTimings()}, console.WithShare("web", sh),
		console.WithInterval(50*time.Millisecond))
	ctx := browsertest.Browser(t)
	bg := context.Background()
	ran := make(chan struct{}, 5)
	c, err := f.Q.Consume(bg, func(ctx context.Context, j queue.Job[string]) error {
		ran <- struct{}{}
		return nil
	}, queue.WithShare(sh, "mail", 3), queue.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Close(bg) })
	for i := range 5 {
		_, _ = f.Q.Enqueue(bg, "hi", queue.WithID(fmt.Sprint("m", i)))
	}
	for range 5 {
		<-ran
	}
	member := `tr[data-share="web"][data-member="mail"] [data-field="%s"]`
	browsertest.Do(t, ctx, "open the overview", chromedp.Navigate(f.Srv.URL+"/ops/"), chromedp.WaitVisible(chromedp.CSS("#timings")))
	// The last job's run is recorded before it is settled and its slot given back: wait for
	// the page to show the five runs and no slot held.
	settled := fmt.Sprintf(`new Promise((ok) => {
		const text = (sel) => (document.querySelector(sel) || {}).textContent;
		const done = () => text(%q) === "5" && text(%q) === "0" && text(%q) === "0" && text(%q) === "5";
		const poll = () => done() ? ok(true) : setTimeout(poll, 20);
		poll();
	})`, `tr[data-queue="mail"] [data-field="runs"]`, fmt.Sprintf(member, "running"),
		fmt.Sprintf(member, "waiting"), fmt.Sprintf(member, "started"))
	if !browsertest.Eval[bool](t, ctx, settled) {
		t.Fatal("the overview never showed the five runs settled")
	}
	s, err := f.Q.Stats(bg)
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
		if got := browsertest.Cell(t, ctx, field); got != w {
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
		if got := browsertest.Text(t, ctx, fmt.Sprintf(member, field)); got != w {
			t.Errorf("share member %s = %q, Share.Stats says %q", field, got, w)
		}
	}
	if s.Acked != 5 || m.Turns != 5 || m.Cap != 2 {
		t.Errorf("acked %d, turns %d, cap %d; want 5, 5, 2", s.Acked, m.Turns, m.Cap)
	}
}
