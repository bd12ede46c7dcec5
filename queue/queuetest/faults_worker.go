package queuetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-go/corral/queue"
)

// workerSpec is what a worker process is told, through the environment.
type workerSpec struct {
	Addr, Name string
	Bound      time.Duration // how long opening the queue may wait for the broker
	// Periodic, if not zero, makes the worker run the schedule "tick" every Periodic
	// (queue.Periodic), whose payload is "w" and Index, instead of consuming.
	Periodic time.Duration
	Index    int
}

const workerEnv = "CORRAL_QUEUETEST_WORKER"

// ServeWorker must be called first in the TestMain of a test that runs RunFaults: in a
// worker process started by the suite it consumes the queue with open's backend until its
// standard input closes, and exits; in any other process it returns at once.
func ServeWorker(open OpenFunc) {
	spec := os.Getenv(workerEnv)
	if spec == "" {
		return
	}
	var ws workerSpec
	if err := json.Unmarshal([]byte(spec), &ws); err != nil {
		fmt.Fprintln(os.Stderr, "queuetest worker:", err)
		os.Exit(2)
	}
	if err := serveWorker(open, ws); err != nil {
		fmt.Fprintln(os.Stderr, "queuetest worker:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// The worker's report, one line per event on its standard output:
//
//	S <id> <attempt>   a handler started
//	H <id>             the handler finished its work (the job may not be acked yet)
//	A <id>             acked (OnSuccess)
//	D <id> <reason>    dead-lettered (OnDead)
//
// A job's payload says what its handler does: "ms:<n>" works n milliseconds and succeeds;
// "poison" exits the process.
func serveWorker(open OpenFunc, ws workerSpec) error {
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	emit := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush()
	}
	q, release, err := openQueue(open, ws.Addr, ws.Name, ws.Bound, queue.WithDedupHorizon(faultHorizon), queue.WithHooks(queue.Hooks{
		OnSuccess: func(_ context.Context, e queue.Event) { emit("A %s", e.ID) },
		OnDead:    func(_ context.Context, e queue.Event) { emit("D %s %s", e.ID, e.Reason) },
	}), queue.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		return err
	}
	defer release()
	if ws.Periodic > 0 {
		return servePeriodic(q, ws)
	}
	ctx := context.Background()
	c, err := q.Consume(ctx, func(ctx context.Context, j queue.Job[string]) error {
		emit("S %s %d", j.ID, j.Attempt)
		if j.Payload == "poison" {
			os.Exit(3)
		}
		ms, _ := strconv.Atoi(strings.TrimPrefix(j.Payload, "ms:"))
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		emit("H %s", j.ID)
		return nil
	}, queue.WithWorkers(faultWorkers), queue.WithLease(faultLease), queue.WithMaxAttempts(faultMaxAttempts))
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the suite closes it
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = c.Close(cctx)
	return errors.Join(err, q.Close(cctx)) // closes the backend too
}

// servePeriodic runs the schedule of ws on q until the standard input closes.
func servePeriodic(q *queue.Queue[string], ws workerSpec) error {
	me := "w" + strconv.Itoa(ws.Index)
	p, err := q.Periodic("tick", queue.Every(ws.Periodic), func(time.Time) string { return me })
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the suite closes it
	p.Stop()
	return nil // the queue is closed by the caller's release
}

// workerProc is a worker process of one scenario.
type workerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed once its output was read and the process waited for
	err   error         // its exit, set before done is closed
}

// startWorker starts a worker process and returns its index.
func (r *faultRun) startWorker() int {
	r.t.Helper()
	return r.startWorkerOf(0)
}

// startWorkerOf starts a worker process, running the schedule of period periodic if it is
// not zero (see workerSpec), and returns its index.
func (r *faultRun) startWorkerOf(periodic time.Duration) int {
	r.t.Helper()
	r.mu.Lock()
	index := len(r.workers)
	r.mu.Unlock()
	spec, _ := json.Marshal(workerSpec{Addr: r.f.Broker.Addr(), Name: r.name, Bound: r.f.RecoveryBound(),
		Periodic: periodic, Index: index})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(spec))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	w := &workerProc{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	r.mu.Lock()
	i := len(r.workers)
	r.workers = append(r.workers, w)
	r.mu.Unlock()
	go func() { // owned by the run: waited for through w.done in killWorkers
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.record(i, sc.Text())
		}
		w.err = cmd.Wait()
		if (w.err != nil || r.t.Failed() || os.Getenv("CORRAL_FAULTS_DEBUG") != "") && stderr.Len() > 0 {
			r.t.Logf("worker %d (%v): %s", i, w.err, lastLines(stderr.String(), 30))
		}
		close(w.done)
		r.notify()
	}()
	return i
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// killWorker ends worker i with SIGKILL and waits for it.
func (r *faultRun) killWorker(i int) {
	r.mu.Lock()
	w := r.workers[i]
	r.mu.Unlock()
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

// stopWorkers closes every worker's standard input (a graceful exit) and waits, a minute at
// most, before killing.
func (r *faultRun) stopWorkers() {
	r.mu.Lock()
	ws := slices.Clone(r.workers)
	r.mu.Unlock()
	for _, w := range ws {
		_ = w.stdin.Close()
	}
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	for i, w := range ws {
		select {
		case <-w.done:
			if w.err != nil && !killed(w.err) && exitCode(w.err) != 3 {
				r.t.Errorf("worker %d: %v", i, w.err)
			}
		case <-t.C:
			r.t.Errorf("worker %d did not stop within a minute", i)
			_ = w.cmd.Process.Signal(syscall.SIGKILL)
			<-w.done
		}
	}
}

// killWorkers kills every worker process by its PID and waits for it (Cleanup).
func (r *faultRun) killWorkers() {
	r.mu.Lock()
	ws := slices.Clone(r.workers)
	r.mu.Unlock()
	for _, w := range ws {
		_ = w.cmd.Process.Signal(syscall.SIGKILL)
		<-w.done
	}
}

func killed(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return 0
}
