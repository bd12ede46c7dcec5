package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/console"
	"github.com/corral-go/corral/latency"
	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/memory"
)

// overviewCells renders c's overview and returns the cells of the rows that have the attributes
// row (such as `data-queue="mail"`), by data-field name, with their tags stripped.
func overviewCells(t *testing.T, c *console.Console, row string) map[string]string {
	t.Helper()
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("overview: %d: %s", rec.Code, rec.Body)
	}
	cells := map[string]string{}
	for _, tr := range strings.Split(rec.Body.String(), "<tr ")[1:] {
		if !strings.HasPrefix(tr, row+">") {
			continue
		}
		tr, _, _ = strings.Cut(tr, "</tr>")
		for _, m := range cellRE.FindAllStringSubmatch(tr, -1) {
			cells[m[1]] = tagRE.ReplaceAllString(m[2], "")
		}
	}
	if len(cells) == 0 {
		t.Fatalf("the overview has no row %s", row)
	}
	return cells
}

var (
	cellRE = regexp.MustCompile(`(?s)<td data-field="(\w+)">(.*?)</td>`)
	tagRE  = regexp.MustCompile(`<[^>]*>`)
)

// checkCells reports the cells of got that differ from want.
func checkCells(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for f, w := range want {
		if got[f] != w {
			t.Errorf("%s: %s = %q, want %q", what, f, got[f], w)
		}
	}
}

// TestOverviewTimings: the overview shows a timed queue's wait and run time percentiles from
// its Stats, exactly, on the virtual clock; an untimed queue's are those of its sample (here
// its first run); a queue that ran nothing says "none yet"; the health rows say reachable
// and paused as Stats does.
func TestOverviewTimings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mail, _ := queue.New[int](ctx, queue.WithTimings())
		plain, _ := queue.New[int](ctx)
		idle, _ := queue.New[int](ctx)
		defer mail.Close(ctx)
		defer plain.Close(ctx)
		defer idle.Close(ctx)
		for i := 1; i <= 4; i++ {
			if _, err := mail.Enqueue(ctx, i); err != nil {
				t.Fatal(err)
			}
			_, _ = plain.Enqueue(ctx, i)
		}
		time.Sleep(time.Second) // every job waits 1s, and then for the ones before it
		handle := func(ctx context.Context, j queue.Job[int]) error {
			time.Sleep(time.Duration(j.Payload) * 100 * time.Millisecond)
			return nil
		}
		cm, _ := mail.Consume(ctx, handle, queue.WithWorkers(1))
		cp, _ := plain.Consume(ctx, handle, queue.WithWorkers(1))
		time.Sleep(time.Minute)
		_, _ = cm.Close(ctx)
		_, _ = cp.Close(ctx)
		if err := plain.Pause(ctx); err != nil {
			t.Fatal(err)
		}

		var wait, run latency.Histogram
		for i, w := range []time.Duration{1000, 1100, 1300, 1600} {
			wait.Record(w * time.Millisecond)
			run.Record(time.Duration(i+1) * 100 * time.Millisecond)
		}
		s, _ := mail.Stats(ctx)
		if s.Wait != wait || s.Run != run {
			t.Fatalf("Stats: wait %d runs sum %v, run %d runs sum %v; want 4 runs, sums %v and %v",
				s.Wait.Count, s.Wait.Sum, s.Run.Count, s.Run.Sum, wait.Sum, run.Sum)
		}

		c := console.New([]console.Source{console.Of("mail", mail), console.Of("plain", plain), console.Of("idle", idle)})
		defer c.Close()
		checkCells(t, "mail", overviewCells(t, c, `data-queue="mail"`), map[string]string{
			"runs":    "4",
			"waitP50": console.Short(wait.Quantile(0.5)), "waitP95": "1.6s", "waitP99": "1.6s",
			"runP50": console.Short(run.Quantile(0.5)), "runP95": "400ms", "runP99": "400ms",
			"reachable": "reachable", "paused": "running", "inFlight": "0", "backendErrors": "0", "acked": "4",
		})
		var firstWait, firstRun latency.Histogram
		firstWait.Record(time.Second)
		firstRun.Record(100 * time.Millisecond)
		checkCells(t, "plain", overviewCells(t, c, `data-queue="plain"`), map[string]string{
			"runs":    "1",
			"waitP50": console.Short(firstWait.Quantile(0.5)), "waitP99": console.Short(firstWait.Quantile(0.99)),
			"runP50": console.Short(firstRun.Quantile(0.5)), "runP99": console.Short(firstRun.Quantile(0.99)),
			"reachable": "reachable", "paused": "paused", "acked": "4",
		})
		checkCells(t, "idle", overviewCells(t, c, `data-queue="idle"`), map[string]string{
			"runs":    "none yet",
			"waitP50": "–", "waitP95": "–", "waitP99": "–", "runP50": "–", "runP95": "–", "runP99": "–",
			"acked": "0",
		})
		// The medians are the estimates of the 2nd wait and run, within latency's v/16.
		if p, v := wait.Quantile(0.5), 1100*time.Millisecond; p < v-v/16 || p > v+v/16 {
			t.Errorf("wait p50 %v, want 1.1s within 1/16", p)
		}
		if p, v := run.Quantile(0.5), 200*time.Millisecond; p < v-v/16 || p > v+v/16 {
			t.Errorf("run p50 %v, want 200ms within 1/16", p)
		}
	})
}

// TestOverviewShareSplit: the overview shows each member of a Share given with WithShare, with
// its jobs in flight and waiting and the jobs it started, exactly, while they run and after.
func TestOverviewShareSplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		sh := queue.NewShare(3, queue.Weighted)
		users, _ := queue.New[int](ctx)
		bulk, _ := queue.New[int](ctx)
		defer users.Close(ctx)
		defer bulk.Close(ctx)
		for i := range 3 {
			_, _ = users.Enqueue(ctx, i)
		}
		for i := range 2 {
			_, _ = bulk.Enqueue(ctx, i)
		}
		sleep := func(ctx context.Context, j queue.Job[int]) error { time.Sleep(time.Second); return nil }
		cu, _ := users.Consume(ctx, sleep, queue.WithShare(sh, "users", 2), queue.WithWorkers(2))
		cb, _ := bulk.Consume(ctx, sleep, queue.WithShare(sh, "bulk", 1), queue.WithWorkers(1))
		c := console.New([]console.Source{console.Of("users", users), console.Of("bulk", bulk)},
			console.WithShare("web", sh))
		defer c.Close()

		synctest.Wait() // users runs 2 (its cap) and holds 1; bulk runs 1 and holds 1
		split := func(name string) map[string]string {
			return overviewCells(t, c, fmt.Sprintf(`data-share="web" data-member=%q`, name))
		}
		checkCells(t, "users running", split("users"), map[string]string{"weight": "2", "workers": "2",
			"running": "2", "waiting": "1", "started": "2", "depth": "0"})
		checkCells(t, "bulk running", split("bulk"), map[string]string{"weight": "1", "workers": "1",
			"running": "1", "waiting": "1", "started": "1", "depth": "0"})

		time.Sleep(time.Minute)
		checkCells(t, "users done", split("users"), map[string]string{"running": "0", "waiting": "0",
			"started": "3", "busy": "3s", "share": "60.0%"})
		checkCells(t, "bulk done", split("bulk"), map[string]string{"running": "0", "waiting": "0",
			"started": "2", "busy": "2s", "share": "40.0%"})
		members, _ := sh.Stats(ctx)
		if len(members) != 2 || strconv.FormatUint(members[0].Turns, 10) != split("users")["started"] {
			t.Errorf("Share.Stats %+v, want users then bulk, as shown", members)
		}
		_, _ = cu.Close(ctx)
		_, _ = cb.Close(ctx)
	})
}

// down is an in-memory backend whose Stats fails with ErrUnavailable while down is set, and
// which reports the losses of stored jobs that losses counts.
type down struct {
	*memory.Backend
	down   atomic.Bool
	losses atomic.Uint64
}

func (d *down) Losses() uint64 { return d.losses.Load() }

func (d *down) Stats(ctx context.Context) (driver.Stats, error) {
	if d.down.Load() {
		return driver.Stats{}, fmt.Errorf("broker gone: %w", queue.ErrUnavailable)
	}
	return d.Backend.Stats(ctx)
}

// TestOverviewUnreachable: a queue whose backend cannot be reached shows unreachable, with the
// error, and reachable again once it answers; the losses the backend reports are shown.
func TestOverviewUnreachable(t *testing.T) {
	ctx := context.Background()
	b := &down{Backend: memory.New()}
	q, _ := queue.New[string](ctx, queue.WithBackend(b))
	defer q.Close(ctx)
	c := console.New([]console.Source{console.Of("mail", q)})
	defer c.Close()
	if got := overviewCells(t, c, `data-queue="mail"`)["losses"]; got != "0" {
		t.Errorf("losses before any: %q, want 0", got)
	}
	b.down.Store(true)
	b.losses.Store(1)
	cells := overviewCells(t, c, `data-queue="mail"`)
	if cells["losses"] != "1" {
		t.Errorf("losses after one: %q, want 1", cells["losses"])
	}
	if cells["reachable"] != "unreachable" || !strings.HasPrefix(cells["lastError"], "broker gone: queue: backend unavailable (") {
		t.Errorf("backend down: reachable %q, last error %q", cells["reachable"], cells["lastError"])
	}
	b.down.Store(false)
	if got := overviewCells(t, c, `data-queue="mail"`)["reachable"]; got != "reachable" {
		t.Errorf("backend back: %q, want reachable", got)
	}
}

func TestWithShareMisuse(t *testing.T) {
	sh := queue.NewShare(1, queue.Weighted)
	q, _ := queue.New[string](context.Background())
	defer q.Close(context.Background())
	for name, f := range map[string]func(){
		"no name":  func() { console.WithShare("", sh) },
		"no share": func() { console.WithShare("web", nil) },
		"two named web": func() {
			console.New([]console.Source{console.Of("q", q)}, console.WithShare("web", sh), console.WithShare("web", sh)).Close()
		},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "console: ") {
					t.Errorf("%s: recovered %v, want a console panic", name, r)
				}
			}()
			f()
		}()
	}
}
