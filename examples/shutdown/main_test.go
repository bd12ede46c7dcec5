package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
		os.Exit(code)
	}))
}

// processTimeout bounds every run of the binary: a hung shutdown fails the
// test instead of hanging it.
const processTimeout = 30 * time.Second

// TestSelfDriving runs the program as CI does, with no flags: it must post
// its orders, signal itself, drain and exit 0 with the exact report.
func TestSelfDriving(t *testing.T) {
	bin := build(t)
	ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	got := normalize(t, stdout.String(), 8)
	want := `listening on http://127.0.0.1:PORT
client: POST /orders ord-1: 202 accepted
client: POST /orders ord-2: 202 accepted
client: POST /orders ord-2: 200 duplicate
client: POST /orders ord-3: 202 accepted
client: POST /orders ord-4: 202 accepted
client: POST /orders ord-5: 202 accepted
client: POST /orders ord-6: 202 accepted
client: POST /orders ord-7: 202 accepted
client: POST /orders ord-8: 202 accepted
client: sending SIGTERM to my own process
shutdown: ` + signalCause("terminated") + `; deadline 5s
  1. http.Server.Shutdown: ok, <d> left
  2. Consumer.Drain: ok, acked=A returned=R dead-lettered=D abandoned=0, <d> left
  3. Pool.Close: ok, <d> left
report:
  orders: accepted=8 duplicates=1 acked=7 dead-lettered=1 left-in-queue=0 retries=1
  dead letter ord-4: permanent after 1 attempt(s): payment: card declined
  invoices mailed: 7
  render pool: submitted=7 completed=7 failed=0 rejected=0 dropped=0 skipped=0 workers=0
clean shutdown in <d>
`
	if got != want {
		t.Errorf("output (normalized):\n%s\nwant:\n%s", got, want)
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr:\n%s", &stderr)
	}
}

// TestServeSIGINT runs the service with -serve, posts orders over HTTP,
// interrupts it like Ctrl-C and checks the report: every accepted order is
// settled during the drain, and the process exits 0.
func TestServeSIGINT(t *testing.T) {
	p := start(t, "-serve")
	for _, c := range []struct {
		o    order
		want string
	}{
		{order{"t-1", cardOK, 100}, "202 accepted"},
		{order{"t-2", cardDeclined, 200}, "202 accepted"},
		{order{"t-3", cardFlaky, 300}, "202 accepted"},
		{order{"t-1", cardOK, 100}, "200 duplicate"},
		{order{"t-4", cardOK, 400}, "202 accepted"},
		{order{"", cardOK, 400}, "400 bad order: id, card and a positive amount_cents are required"},
	} {
		if got := p.post(t, c.o); got != c.want {
			t.Errorf("POST %+v = %q, want %q", c.o, got, c.want)
		}
	}
	out, err := p.stop(t, os.Interrupt)
	if err != nil {
		t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, p.stderr.String())
	}
	got := normalize(t, out, 4)
	want := `shutdown: ` + signalCause("interrupt") + `; deadline 5s
  1. http.Server.Shutdown: ok, <d> left
  2. Consumer.Drain: ok, acked=A returned=R dead-lettered=D abandoned=0, <d> left
  3. Pool.Close: ok, <d> left
report:
  orders: accepted=4 duplicates=1 acked=3 dead-lettered=1 left-in-queue=0 retries=1
  dead letter t-2: permanent after 1 attempt(s): payment: card declined
  invoices mailed: 3
  render pool: submitted=3 completed=3 failed=0 rejected=0 dropped=0 skipped=0 workers=0
clean shutdown in <d>
`
	if got != want {
		t.Errorf("output (normalized):\n%s\nwant:\n%s", got, want)
	}
}

// TestServeDeadline pins the unclean path: an order whose charge never
// returns outlives the drain's share of a 2s deadline, so Consumer.Drain
// cancels its handler and returns the job, the report shows it left in the
// queue, and the process exits 1. (The drain's share, 1.5s, is ample for
// the other order, even on a loaded machine.)
func TestServeDeadline(t *testing.T) {
	const grace = 2 * time.Second
	p := start(t, "-serve", "-grace", grace.String())
	for _, o := range []order{{"t-ok", cardOK, 100}, {"t-stuck", cardStuck, 200}} {
		if got := p.post(t, o); got != "202 accepted" {
			t.Fatalf("POST %+v = %q, want 202 accepted", o, got)
		}
	}
	start := time.Now()
	out, err := p.stop(t, syscall.SIGTERM)
	if elapsed := time.Since(start); elapsed > grace+time.Second {
		t.Errorf("shutdown took %v with -grace %v", elapsed, grace)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want exit status 1\nstdout:\n%s\nstderr:\n%s", err, out, p.stderr.String())
	}
	got := normalize(t, out, 2)
	want := `shutdown: ` + signalCause("terminated") + `; deadline 2s
  1. http.Server.Shutdown: ok, <d> left
  2. Consumer.Drain: FAILED (shutdown deadline passed), acked=A returned=1 dead-lettered=D abandoned=0, <d> left
  3. Pool.Close: ok, <d> left
report:
  orders: accepted=2 duplicates=0 acked=1 dead-lettered=0 left-in-queue=1 retries=0
  invoices mailed: 1
  render pool: submitted=1 completed=1 failed=0 rejected=0 dropped=0 skipped=0 workers=0
UNCLEAN shutdown in <d>
`
	if got != want {
		t.Errorf("output (normalized):\n%s\nwant:\n%s", got, want)
	}
	for _, s := range []string{"orders left in the in-memory queue: 1", "consumer: shutdown deadline passed"} {
		if !strings.Contains(p.stderr.String(), s) {
			t.Errorf("stderr does not say %q:\n%s", s, p.stderr.String())
		}
	}
}

// build returns the program, compiled once for all the tests (with the race
// detector when they run with it) into binDir, which TestMain removes.
func build(t *testing.T) string {
	t.Helper()
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// binDir holds the program built by buildOnce.
var binDir string

var buildOnce = sync.OnceValues(func() (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the test builds the program with the go command: %w", err)
	}
	if binDir, err = os.MkdirTemp("", "shutdown-test"); err != nil {
		return "", err
	}
	bin := filepath.Join(binDir, "shutdown")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command(goTool, append(args, ".")...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// process is the program running with -serve.
type process struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	stderr bytes.Buffer
	url    string
	client *http.Client
}

// start builds and starts the program and waits for its "listening on" line.
func start(t *testing.T, args ...string) *process {
	t.Helper()
	bin := build(t)
	ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
	t.Cleanup(cancel)
	p := &process{
		cmd:    exec.CommandContext(ctx, bin, args...),
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}},
	}
	t.Cleanup(p.client.CloseIdleConnections)
	p.cmd.Stderr = &p.stderr
	pipe, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Wait() }) // a no-op after stop; reaps the process after a failure
	p.stdout = bufio.NewReader(pipe)
	line, err := p.stdout.ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		cancel()
		t.Fatalf("first line %q (%v), want \"listening on URL\"", line, err)
	}
	p.url = url
	return p
}

// post sends o and returns "code status".
func (p *process) post(t *testing.T, o order) string {
	t.Helper()
	got, err := post(context.Background(), p.client, p.url+"/orders", o)
	if err != nil {
		t.Fatalf("POST %+v: %v", o, err)
	}
	return got
}

// stop sends sig and returns the rest of the output and the exit error.
func (p *process) stop(t *testing.T, sig os.Signal) (string, error) {
	t.Helper()
	p.client.CloseIdleConnections()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal: %v", err)
	}
	rest, err := io.ReadAll(p.stdout)
	if err != nil {
		t.Fatalf("read stdout: %v", err)
	}
	return string(rest), p.cmd.Wait()
}

var (
	portRE  = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	leftRE  = regexp.MustCompile(`, \S+ left$`)
	tookRE  = regexp.MustCompile(`shutdown in \S+$`)
	drainRE = regexp.MustCompile(`acked=(\d+) returned=(\d+) dead-lettered=(\d+) abandoned`)
)

// normalize replaces what varies from run to run: the port, the times, and
// the split of the accepted orders between "settled before the signal" and
// "settled while draining": the drain's acked (A), dead-lettered (D) and, in
// a clean drain, returned (R: the flaky order's first attempt, if it failed
// during the drain). It checks that those numbers are in range.
func normalize(t *testing.T, out string, accepted int) string {
	t.Helper()
	lines := strings.SplitAfter(out, "\n")
	for i, l := range lines {
		l, nl := strings.CutSuffix(l, "\n")
		l = portRE.ReplaceAllString(l, "127.0.0.1:PORT")
		l = leftRE.ReplaceAllString(l, ", <d> left")
		l = tookRE.ReplaceAllString(l, "shutdown in <d>")
		if m := drainRE.FindStringSubmatch(l); m != nil {
			a, _ := strconv.Atoi(m[1])
			r, _ := strconv.Atoi(m[2])
			d, _ := strconv.Atoi(m[3])
			// The drain settles at most every accepted order, once each; an
			// order is returned during a clean drain only for a retry (one
			// order, once), or at the deadline.
			if a+d > accepted || r > 1 {
				t.Errorf("Consumer.Drain saw %d acked, %d returned, %d dead-lettered of %d accepted orders", a, r, d, accepted)
			}
			repl := "acked=A returned=R dead-lettered=D abandoned"
			if strings.Contains(l, "FAILED") { // at the deadline the returned count is pinned
				repl = "acked=A returned=${2} dead-lettered=D abandoned"
			}
			l = drainRE.ReplaceAllString(l, repl)
		}
		if nl {
			l += "\n"
		}
		lines[i] = l
	}
	return strings.Join(lines, "")
}

// signalCause is what context.Cause says for the NotifyContext context once
// sig arrived: since Go 1.26 (the go.mod minimum), it names the signal.
func signalCause(sig string) string {
	return sig + " signal received"
}
