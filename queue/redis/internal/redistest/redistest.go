// Package redistest starts throwaway redis-server processes for tests: a temporary directory,
// a random loopback port, the append-only file on (appendfsync always by default), no RDB
// snapshots. The server is stopped by its PID when the test ends and its directory removed;
// a program or a TestMain starts one with Launch and stops it with Stop.
//
// The binary is Debian's (`apt-get install redis-server`), found on PATH or at the path that
// CORRAL_REDIS_SERVER names. Without it a test fails, saying what to install: it never skips.
//
// The server is a real process, so a test can SIGKILL it (Kill), start it again on the same
// directory and port (Restart), and stop and resume it (Pause, Continue).
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// EnvBin names the environment variable that selects the redis-server binary.
const EnvBin = "CORRAL_REDIS_SERVER"

// Binary returns the path of redis-server, or an error naming the package to install.
func Binary() (string, error) {
	if p := os.Getenv(EnvBin); p != "" {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", errors.New("redistest: " + EnvBin + "=" + p + " is not an executable redis-server: " +
				"install it with `apt-get install redis-server`, or point " + EnvBin + " at its path")
		}
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	return "", errors.New("redistest: no redis-server binary on PATH: install it with " +
		"`apt-get install redis-server`, or set " + EnvBin + " to its path")
}

// Server is one redis-server process. Its methods are not safe for concurrent use.
type Server struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	// Fsync is the server's appendfsync setting: "always" or "everysec".
	Fsync string

	dir  string
	bin  string
	args []string // extra settings, such as replicaof
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
}

// Start starts a server with appendfsync fsync ("always" if empty), stopped when tb ends.
func Start(tb testing.TB, fsync string) *Server {
	tb.Helper()
	s, err := Launch(fsync)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// StartReplica starts a server that replicates master, stopped when tb ends. It returns once
// the replica has synchronised with the master.
func StartReplica(tb testing.TB, master *Server) *Server {
	tb.Helper()
	s, err := Launch(master.Fsync, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	defer c.Close()
	for deadline := time.Now().Add(time.Minute); ; {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: replica not in sync within a minute: %v\n%s", err, info)
		}
		time.Sleep(10 * time.Millisecond) // a polling pace: the server gives no other sign
	}
}

// Promote makes a replica a master (REPLICAOF NO ONE).
func (s *Server) Promote(tb testing.TB) {
	tb.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	defer c.Close()
	if err := c.Do(context.Background(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
		tb.Fatal(err)
	}
}

// Launch is Start for a program or a TestMain: the caller must call Stop. args are extra
// settings of the server.
func Launch(fsync string, args ...string) (*Server, error) {
	if fsync == "" {
		fsync = "always"
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	s := &Server{dir: dir, bin: bin, Fsync: fsync, args: args}
	if s.Port, err = freePort(); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.start(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// freePort returns a free loopback port whose cluster bus port (10000 more) is free too.
func freePort() (int, error) {
	var last error
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: free port: %w", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		if p+10000 > 65535 {
			_ = l.Close()
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		_ = l.Close()
		if err != nil {
			last = err
			continue
		}
		_ = bus.Close()
		return p, nil
	}
	return 0, fmt.Errorf("redistest: no free port with a free cluster bus port in 100 tries: %v", last)
}

func (s *Server) start() error {
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--appendonly", "yes", "--appendfsync", s.Fsync, "--save", "",
		"--protected-mode", "no", "--daemonize", "no", "--logfile", "",
		"--repl-diskless-sync-delay", "0") // a replica syncs at once, not after 5s
	cmd.Args = append(cmd.Args, s.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w", s.bin, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	done := s.done
	go func() { // owned by s: waited for through done by Stop and Kill
		_ = cmd.Wait()
		close(done)
	}()
	return s.waitReady()
}

// waitReady waits, a minute at most, until the server answers PING (and has loaded its data).
func (s *Server) waitReady() error {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			return fmt.Errorf("redistest: redis-server exited:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: redis-server not ready within a minute: %w", err)
		}
		time.Sleep(10 * time.Millisecond) // a polling pace: the server gives no other sign
	}
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// Stop kills the server (if it runs) and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil {
		_ = syscall.Kill(s.cmd.Process.Pid, syscall.SIGCONT)
		s.Kill(nil)
	}
	_ = os.RemoveAll(s.dir)
}

// Kill ends the server with SIGKILL and waits for it, leaving its directory.
func (s *Server) Kill(tb testing.TB) {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// Restart starts a killed server again on its directory and port.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Kill(tb)
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
}

// Pause stops the server with SIGSTOP.
func (s *Server) Pause(tb testing.TB) {
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		tb.Fatal(err)
	}
}

// Continue resumes the server with SIGCONT.
func (s *Server) Continue(tb testing.TB) {
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		tb.Fatal(err)
	}
}
