package testserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary a server (helper) instead of running the tests.
const helperEnv = "TESTSERVER_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		helper(mode, os.Args[1:])
		return
	}
	goleak.VerifyTestMain(m)
}

// helper is the server: "serve <port> <mark> <forks>" forks children (each in a session of its
// own, as a PostgreSQL backend), forks of them (at most 3), or 3 and then 100 more as fast as
// it can if forks is -1, then prints a line and echoes lines on port; "child <mark>" sleeps; "exit" says why and exits 3.
func helper(mode string, args []string) {
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "helper: refusing to serve")
		os.Exit(3)
	case "owner":
		owner(args)
		return
	case "child":
		time.Sleep(time.Minute) // a process that outlives its test only if Kill missed it
		os.Exit(0)
	}
	forks, _ := strconv.Atoi(args[2])
	fork := func() {
		c := exec.Command(os.Args[0], args[1])
		c.Env = append(os.Environ(), helperEnv+"=child")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		_ = c.Start()
	}
	// The first children are forked before the server serves; for ever means 100 more after.
	first := min(forks, 3)
	if forks < 0 {
		first = 3
	}
	for range first {
		fork()
	}
	if forks < 0 {
		go func() {
			for range 100 {
				fork()
			}
		}()
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "helper: serving on", args[0])
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					_ = c.Close()
					return
				}
				_, _ = c.Write([]byte(line))
			}
		}()
	}
}

// owner starts the helper serving on args[0] through a Server, says so on its standard output
// and waits to be killed.
func owner(args []string) {
	port, _ := strconv.Atoi(args[0])
	s := New(Spec{Pkg: "testserver", Path: os.Args[0], Args: append(args, "0"), Env: []string{helperEnv + "=serve"},
		Ready: func(ctx context.Context) error { return echo(ctx, port) }})
	if err := s.Restart(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute) // until the test kills this process
	os.Exit(1)
}

// echo sends a line to the helper on port and reads it back within ctx.
func echo(ctx context.Context, port int) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && line != "ping\n" {
		err = fmt.Errorf("echoed %q", line)
	}
	return err
}

// start starts the helper serving on a free port, forking forks children, stopped when t ends.
// It returns the server, its port and the mark that each of its processes' command lines holds.
func start(t *testing.T, mode string, forks int) (*Server, int, string) {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	mark := "mark-" + hex.EncodeToString(b[:])
	s := New(Spec{Pkg: "testserver", Path: os.Args[0], Args: []string{strconv.Itoa(port), mark, strconv.Itoa(forks)},
		Env: []string{helperEnv + "=" + mode}, Log: t.TempDir() + "/server.log",
		Ready: func(ctx context.Context) error { return echo(ctx, port) }})
	t.Cleanup(func() { s.Stop(0, 0) })
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	return s, port, mark
}

// marked returns the live processes whose command line holds mark.
func marked(mark string) []int {
	var out []int
	for _, pid := range pids() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && strings.Contains(string(b), mark) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestKillEndsForkedProcesses: Kill ends the server and the processes it forked, those that left
// its process group included, while it keeps forking; Restart serves again on the same port.
func TestKillEndsForkedProcesses(t *testing.T) {
	s, port, mark := start(t, "serve", -1)
	for i := range 5 {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
		if s.Running() || s.PID() != 0 || s.Children() != nil {
			t.Fatalf("run %d: Running %v, PID %d, Children %v after Kill", i, s.Running(), s.PID(), s.Children())
		}
		if left := marked(mark); len(left) != 0 {
			t.Fatalf("run %d: processes %v alive after Kill", i, left)
		}
		if err := s.Kill(); err == nil {
			t.Fatal("a second Kill: no error")
		}
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		if err := echo(context.Background(), port); err != nil {
			t.Fatalf("after Restart: %v", err)
		}
	}
}

// TestPauseContinue: Pause stops the server and each process it forked; it answers nothing
// until Continue.
func TestPauseContinue(t *testing.T) {
	s, port, mark := start(t, "serve", 3)
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if !s.Paused() {
		t.Fatal("not Paused after Pause")
	}
	procs := marked(mark)
	if len(procs) != 4 {
		t.Fatalf("%d processes, want the server and 3 children", len(procs))
	}
	for _, pid := range procs {
		if _, state, _ := stat(pid); state != 'T' {
			t.Errorf("process %d in state %c after Pause, want T", pid, state)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := echo(ctx, port); err == nil {
		t.Fatal("a paused server answered")
	}
	if err := s.Continue(); err != nil {
		t.Fatal(err)
	}
	if s.Paused() {
		t.Fatal("Paused after Continue")
	}
	for _, pid := range procs {
		if _, state, _ := stat(pid); state == 'T' {
			t.Errorf("process %d stopped after Continue", pid)
		}
	}
	if err := echo(context.Background(), port); err != nil {
		t.Fatalf("after Continue: %v", err)
	}
	s.Stop(0, 0)
	if left := marked(mark); len(left) != 0 {
		t.Fatalf("processes %v alive after Stop of a paused server", left)
	}
}

// TestStopWithSignal: Stop sends its signal first; a server that ends on it is not killed.
func TestStopWithSignal(t *testing.T) {
	s, _, _ := start(t, "serve", 0)
	s.Stop(syscall.SIGTERM, time.Minute)
	if s.Running() {
		t.Fatal("running after Stop")
	}
	if st := s.cmd.ProcessState.Sys().(syscall.WaitStatus); st.Signal() != syscall.SIGTERM {
		t.Fatalf("the server ended with %v, want SIGTERM", st)
	}
}

// TestExitBeforeReady: a server that exits before it is ready fails WaitReady at once, with
// the end of its log.
func TestExitBeforeReady(t *testing.T) {
	s := New(Spec{Pkg: "testserver", Path: os.Args[0], Env: []string{helperEnv + "=exit"},
		Log:   t.TempDir() + "/server.log",
		Ready: func(context.Context) error { return errors.New("not yet") }})
	t.Cleanup(func() { s.Stop(0, 0) })
	err := s.Restart()
	if err == nil || !strings.Contains(err.Error(), "helper: refusing to serve") ||
		!strings.HasPrefix(err.Error(), "testserver: ") {
		t.Fatalf("Restart of a server that exits: %v, want its log", err)
	}
	if got := s.LogTail(1); got != "helper: refusing to serve" {
		t.Errorf("LogTail(1) = %q", got)
	}
}

// TestStartTwice: Start of a running server is an error.
func TestStartTwice(t *testing.T) {
	s, _, _ := start(t, "serve", 0)
	if err := s.Start(); err == nil {
		t.Fatal("Start of a running server: no error")
	}
}

func TestFreePort(t *testing.T) {
	ports, err := FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ports)
	if len(slices.Compact(ports)) != 8 {
		t.Fatalf("FreePorts(8) = %v, want 8 distinct ports", ports)
	}
	p, err := FreePort(1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []int{p, p + 1000} {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
		if err != nil {
			t.Fatalf("port %d: %v", q, err)
		}
		_ = l.Close()
	}
}

// TestDiesWithTheTestProcess: a server whose test process is killed is sent SIGKILL.
func TestDiesWithTheTestProcess(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	mark := "mark-owner-" + strconv.Itoa(port)
	o := exec.Command(os.Args[0], strconv.Itoa(port), mark)
	o.Env = append(os.Environ(), helperEnv+"=owner")
	out, err := o.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		_ = o.Process.Kill()
		_ = o.Wait()
		t.Fatalf("the owner said %q, %v", line, err)
	}
	procs := marked(mark)
	if len(procs) != 2 {
		t.Fatalf("%d processes marked, want the owner and its server", len(procs))
	}
	_ = o.Process.Kill()
	_ = o.Wait()
	if !waitGone(procs) {
		t.Fatalf("processes %v alive ten seconds after their owner was killed", marked(mark))
	}
}
