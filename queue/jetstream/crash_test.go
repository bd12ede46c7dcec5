package jetstream_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
	"github.com/corral-go/corral/retry"
)

// The crash test re-executes the test binary as consumer processes. TestMain runs crashChild
// instead of the tests when crashChildEnv is set.
const (
	crashChildEnv = "CORRAL_CRASH_CHILD" // the queue name
	crashLease    = 2 * time.Second
	crashJobs     = 200
)

// crashFails reports whether job i fails permanently (it must end in the dead letters).
func crashFails(i int) bool { return i%10 == 3 }

// crashChild consumes the queue named by crashChildEnv on the server named by CORRAL_NATS_URL
// until its standard input closes, and reports on standard output, one line per event:
//
//	S <id> <attempt>   handler started
//	H <id>             handler finished its work (the job may be acked or not)
//	A <id>             acked (OnSuccess)
//	D <id> <reason>    dead-lettered (OnDead)
func crashChild() int {
	name := os.Getenv(crashChildEnv)
	nc, err := nats.Connect(os.Getenv(natstest.EnvURL))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	b, err := jetstream.New(js, name, jetstream.WithPrefetch(4))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer b.Close()
	var outMu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	emit := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush()
	}
	q, err := queue.New[string](queue.WithBackend(b), queue.WithDedupHorizon(time.Minute), queue.WithHooks(queue.Hooks{
		OnSuccess: func(e queue.Event) { emit("A %s", e.ID) },
		OnDead:    func(e queue.Event) { emit("D %s %s", e.ID, e.Reason) },
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		emit("S %s %d", j.ID, j.Attempt)
		i, _ := strconv.Atoi(j.Payload)
		// Simulated work, long enough for the parent to kill this process mid-job.
		t := time.NewTimer(time.Duration(10+i%4*10) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		emit("H %s", j.ID)
		if crashFails(i) {
			return retry.Permanent(errors.New("crash test: permanent failure"))
		}
		return nil
	}, queue.Workers(4), queue.Lease(crashLease), queue.MaxAttempts(5))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	if _, err := c.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// child is one consumer process of the crash test.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // closed at EOF of its standard output
	done  chan struct{}
}

func startChild(t *testing.T, url, name string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+name, natstest.EnvURL+"="+url)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 4*crashJobs), done: make(chan struct{})}
	go func() { // owned by the test: waited for through c.done in stop
		defer close(c.done)
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	return c
}

// stop closes the child's standard input (a graceful exit) and waits for it.
func (c *child) stop(t *testing.T) {
	t.Helper()
	_ = c.stdin.Close()
	<-c.done
	if err := c.cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("child: %v", err)
		}
	}
}

// TestCrashKillConsumer runs two consumer processes on one queue and kills one with SIGKILL
// while it handles jobs. Every job must end acked or dead-lettered exactly once as the queue
// sees it (the broker's work stream empty, one dead letter per failing job, none for the
// others); the jobs the killed process held must be redelivered to the survivor, after the
// lease.
func TestCrashKillConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	srv := natstest.Start(t)
	nc := srv.Connect(t)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := natstest.Prefix(t)
	t.Cleanup(func() { deleteStreams(t, js, name) })
	b, err := jetstream.New(js, name)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	q, err := queue.New[string](queue.WithBackend(b), queue.WithDedupHorizon(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range crashJobs {
		if _, err := q.Enqueue(ctx, strconv.Itoa(i), queue.WithID(fmt.Sprintf("job-%03d", i))); err != nil {
			t.Fatal(err)
		}
	}

	victim, survivor := startChild(t, srv.URL, name), startChild(t, srv.URL, name)
	type event struct {
		kind, id string
		attempt  int
		at       time.Time
	}
	var events [2][]event
	parse := func(who int, line string) {
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Errorf("child %d: bad line %q", who, line)
			return
		}
		e := event{kind: f[0], id: f[1], at: time.Now()}
		if e.kind == "S" && len(f) == 3 {
			e.attempt, _ = strconv.Atoi(f[2])
		}
		events[who] = append(events[who], e)
	}
	settled := func() int {
		n := 0
		for _, evs := range events {
			for _, e := range evs {
				if e.kind == "A" || e.kind == "D" {
					n++
				}
			}
		}
		return n
	}
	// inFlight lists the jobs the victim started and did not settle.
	inFlight := func() map[string]bool {
		m := map[string]bool{}
		for _, e := range events[0] {
			switch e.kind {
			case "S":
				m[e.id] = true
			case "A", "D":
				delete(m, e.id)
			}
		}
		return m
	}
	var (
		killedAt time.Time
		held     map[string]bool
	)
	lines := [2]<-chan string{victim.lines, survivor.lines}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	// Until every job is reported settled, or (once the victim is dead, since it may have
	// acked a job without reporting it) the work stream is empty.
	for settled() < crashJobs {
		select {
		case <-tick.C:
			if killedAt.IsZero() {
				continue
			}
			st, err := q.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Ready+st.InFlight+st.Delayed == 0 {
				goto drained
			}
		case l, ok := <-lines[0]:
			if !ok {
				lines[0] = nil
				continue
			}
			parse(0, l)
		case l, ok := <-lines[1]:
			if !ok {
				t.Fatal("survivor exited")
			}
			parse(1, l)
		case <-ctx.Done():
			t.Fatalf("timed out: %d of %d jobs settled", settled(), crashJobs)
		}
		if killedAt.IsZero() && settled() >= crashJobs/5 {
			if h := inFlight(); len(h) > 0 {
				if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killedAt = time.Now()
				// Drain what the victim printed before it died.
				for l := range victim.lines {
					parse(0, l)
				}
				lines[0] = nil
				held = inFlight()
			}
		}
	}
drained:
	victim.stop(t)
	_ = survivor.stdin.Close() // it exits once it has settled what it holds
	for l := range survivor.lines {
		parse(1, l)
	}
	survivor.stop(t)
	if killedAt.IsZero() {
		t.Fatal("the victim was never killed")
	}

	// The queue's view: each job acked or dead-lettered once over both processes, or, for a
	// job the victim acked before dying without reporting it, handled by the victim and not
	// redelivered.
	acked, dead, handled := map[string]int{}, map[string]int{}, map[string]int{}
	for _, evs := range events {
		for _, e := range evs {
			switch e.kind {
			case "A":
				acked[e.id]++
			case "D":
				dead[e.id]++
			case "H":
				handled[e.id]++
			}
		}
	}
	for i := range crashJobs {
		id := fmt.Sprintf("job-%03d", i)
		a, d := acked[id], dead[id]
		switch {
		case crashFails(i) && (d > 1 || a != 0):
			t.Errorf("%s: acked %d, dead-lettered %d times; want dead-lettered once", id, a, d)
		case !crashFails(i) && (a > 1 || d != 0):
			t.Errorf("%s: acked %d, dead-lettered %d times; want acked once", id, a, d)
		case a+d == 0 && handled[id] == 0:
			t.Errorf("%s: lost (never handled)", id)
		}
	}
	if len(held) == 0 {
		t.Fatal("the victim held no job when killed")
	}
	// The victim's jobs come back to the survivor, after the victim's lease runs out: no
	// earlier than the lease's last renewal (every third of it) plus the lease.
	redelivered := 0
	for id := range held {
		var again *event
		for k, e := range events[1] {
			if e.kind == "S" && e.id == id {
				again = &events[1][k]
				break
			}
		}
		if again == nil {
			if acked[id]+dead[id] == 0 && handled[id] == 0 {
				t.Errorf("%s: held by the killed process, never redelivered", id)
			}
			continue // settled by the victim just before it died
		}
		if wait := again.at.Sub(killedAt); wait < crashLease*2/3 {
			t.Errorf("%s redelivered %v after the kill, before the lease (%v) could expire", id, wait, crashLease)
		}
		redelivered++
		if again.attempt < 2 {
			t.Errorf("%s redelivered as attempt %d, want >= 2", id, again.attempt)
		}
	}

	// The broker's view: the work stream is empty, one dead letter per failing job.
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready+st.InFlight+st.Delayed != 0 || st.Dead != crashJobs/10 {
		t.Errorf("stats %+v: want nothing stored and %d dead letters", st, crashJobs/10)
	}
	deadIDs := map[string]int{}
	for dl, err := range q.DeadLetters(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		deadIDs[dl.Job.ID]++
		if dl.Reason != queue.ReasonPermanent {
			t.Errorf("dead letter %s: reason %s", dl.Job.ID, dl.Reason)
		}
	}
	for i := range crashJobs {
		id := fmt.Sprintf("job-%03d", i)
		if want := map[bool]int{true: 1, false: 0}[crashFails(i)]; deadIDs[id] != want {
			t.Errorf("%s: %d dead letters, want %d", id, deadIDs[id], want)
		}
	}
	t.Logf("killed with %d jobs held; %d redelivered to the survivor", len(held), redelivered)
}
