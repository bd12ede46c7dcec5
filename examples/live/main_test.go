package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestEvents watches a workload of 200 jobs through the event stream, from
// before it starts to its end, and checks that the numbers move, stay within
// the bounds, and end exactly where the workload does.
func TestEvents(t *testing.T) {
	const jobs = 200 // img-0149 is corrupt; images 0, 25, ..., 175 fail once
	d, err := newDemo(config{jobs: jobs, tick: 10 * time.Millisecond, waitForViewer: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(d.handler())
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	workDone := make(chan error, 1)
	go func() { workDone <- d.work(ctx) }() // waits for the viewer below
	defer func() {
		cancel() // after a failure before the viewer connected, work still waits for one
		if err := <-workDone; err != nil {
			t.Errorf("work: %v", err)
		}
		if err := d.close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	}()

	resp := get(ctx, t, ts.URL+"/events")
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	events := readEvents(t, bufio.NewReader(resp.Body), func(s snapshot) bool { return s.Done })

	// The first event is the state before the workload: the workload starts
	// once the first viewer has it.
	if first := events[0]; first.Enqueued != 0 || first.Acked != 0 || first.Done {
		t.Errorf("first event %+v, want the state before the workload", first)
	}
	var distinct int
	var midway bool
	for i, s := range events {
		if stored := s.Ready + s.InFlight + s.Delayed; stored > queueCapacity {
			t.Errorf("event %d: %d jobs stored, capacity %d", i, stored, queueCapacity)
		}
		if s.Pool.Running > runtime.GOMAXPROCS(0) || s.Pool.Queued > resizeQueue {
			t.Errorf("event %d: pool running %d queued %d, bounds %d and %d",
				i, s.Pool.Running, s.Pool.Queued, runtime.GOMAXPROCS(0), resizeQueue)
		}
		if s.Acked > 0 && s.Acked < jobs-1 {
			midway = true
		}
		if i == 0 {
			continue
		}
		p := events[i-1]
		if s.Acked < p.Acked || s.Enqueued < p.Enqueued || s.Retried < p.Retried || s.Dead < p.Dead ||
			s.Pool.Completed < p.Pool.Completed || s.ElapsedMS < p.ElapsedMS {
			t.Errorf("event %d went back:\n%+v\nafter\n%+v", i, s, p)
		}
		if s.Acked > p.Acked {
			distinct++
		}
	}
	// The workload takes at least jobs*fetchLatency/fetchWorkers = 750ms,
	// that is 75 ticks: the viewer sees acked climb, not jump to the end.
	if distinct < 10 || !midway {
		t.Errorf("acked rose in %d of %d events (midway seen: %t), want at least 10", distinct, len(events), midway)
	}
	last := events[len(events)-1]
	last.ElapsedMS, last.LagMS, last.Pool.QueueWaitMS = 0, 0, 0
	last.Pool.Workers = 0 // idle workers may or may not have exited yet
	want := snapshot{Jobs: jobs, Done: true, Enqueued: jobs, Acked: jobs - 1, Retried: 8, Dead: 1}
	want.Pool.Completed = jobs - 1
	if last != want {
		t.Errorf("last event\n%+v\nwant\n%+v", last, want)
	}
}

// TestPage checks the viewer page and the polling endpoint.
func TestPage(t *testing.T) {
	d, err := newDemo(config{jobs: 1, tick: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(d.handler())
	defer ts.Close()
	defer func() {
		if err := d.close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	ctx := context.Background()

	resp := get(ctx, t, ts.URL+"/")
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	page := string(body)
	if !strings.Contains(page, `new EventSource("events")`) {
		t.Errorf("the page does not open the event stream:\n%s", page)
	}
	for _, external := range []string{"://", "src=", "href="} {
		if strings.Contains(page, external) {
			t.Errorf("the page refers to something external (%q)", external)
		}
	}

	resp = get(ctx, t, ts.URL+"/stats")
	var s snapshot
	err = json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()
	if err != nil || s != (snapshot{Jobs: 1}) {
		t.Errorf("GET /stats = %+v, %v; want the idle state", s, err)
	}

	resp, err = http.Get(ts.URL + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %s", resp.Status)
	}
}

// TestRun runs the program as CI does, without -hold: it prints the URL,
// saying that it serves only while the workload runs, the final stats, and
// that it stopped serving, and returns once the workload is done.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	cfg := config{addr: "127.0.0.1:0", jobs: 150, tick: 50 * time.Millisecond}
	if err := run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, &out)
	}
	got := normalize(out.String())
	const want = `live stats at http://127.0.0.1:PORT/ while the workload runs (a second or two; -hold keeps serving after it)
done in <d>: jobs=150 acked=149 retried=6 dead=1; pool: completed=149 failed=0
dead letter img-0149: permanent after 1 attempt(s): decode: corrupt image
stopped serving http://127.0.0.1:PORT/ (run with -hold to keep the page up)
`
	if got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

// TestHold runs the program with -hold: the workload waits for a viewer, the
// server keeps serving after it, and cancelling the context (the signal)
// ends the viewer's stream with a last event and makes run return.
func TestHold(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	runDone := make(chan error, 1)
	go func() {
		err := run(ctx, config{addr: "127.0.0.1:0", jobs: 20, tick: 10 * time.Millisecond, hold: true, waitForViewer: true}, pw)
		pw.Close()
		runDone <- err
	}()
	joined := false
	defer func() {
		if !joined { // the test failed early: stop run and wait for it
			cancel()
			pr.Close() // run's next write fails instead of blocking
			<-runDone
		}
	}()
	out := bufio.NewReader(pr)
	line := readLine(t, out)
	url, ok := strings.CutPrefix(line, "live stats at ")
	if !ok {
		cancel()
		t.Fatalf("first line %q", line)
	}
	if line := readLine(t, out); line != "the workload starts when the page is opened" {
		t.Errorf("second line %q", line)
	}
	// The viewer's request has its own context: cancelling ctx is the signal
	// to the program, not the viewer leaving.
	resp := get(context.Background(), t, url+"events")
	defer resp.Body.Close()
	stream := bufio.NewReader(resp.Body)
	events := readEvents(t, stream, func(s snapshot) bool { return s.Done })
	if n := len(events); events[n-1].Acked != 20 {
		t.Errorf("last event %+v, want 20 acked", events[n-1])
	}
	if line := normalize(readLine(t, out)); line != "done in <d>: jobs=20 acked=20 retried=1 dead=0; pool: completed=20 failed=0" {
		t.Errorf("stats line %q", line)
	}
	if line := readLine(t, out); line != "serving until SIGINT or SIGTERM" {
		t.Errorf("line %q", line)
	}
	// Still serving: the stream goes on until the signal.
	more := readEvents(t, stream, func(snapshot) bool { return true })
	cancel()
	joined = true
	if err := <-runDone; err != nil {
		t.Errorf("run: %v", err)
	}
	// The stream sends its last event and ends.
	rest := readEvents(t, stream, nil)
	if len(rest) == 0 {
		t.Error("the stream ended without a last event")
	}
	for _, s := range append(more, rest...) {
		if !s.Done || s.Acked != 20 {
			t.Errorf("event after the workload: %+v", s)
		}
	}
}

// get sends a GET and fails the test unless it answers 200.
func get(ctx context.Context, t *testing.T, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return resp
}

// readEvents parses the stream's events until one satisfies stop (included)
// or, with a nil stop, until the stream ends.
func readEvents(t *testing.T, br *bufio.Reader, stop func(snapshot) bool) []snapshot {
	t.Helper()
	var events []snapshot
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" && stop == nil {
			return events
		}
		if err != nil {
			t.Fatalf("after %d events: %v (partial line %q)", len(events), err, line)
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue // the end of an event
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not an event's data", line)
		}
		var s snapshot
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			t.Fatalf("event %d: %v: %s", len(events), err, data)
		}
		events = append(events, s)
		if stop != nil && stop(s) {
			return events
		}
	}
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read output: %v (partial %q)", err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

var (
	portRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	tookRE = regexp.MustCompile(`done in \S+:`)
)

func normalize(s string) string {
	s = portRE.ReplaceAllString(s, "127.0.0.1:PORT")
	return tookRE.ReplaceAllString(s, "done in <d>:")
}
