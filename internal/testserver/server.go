package testserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec describes a server process.
type Spec struct {
	// Pkg names the package that starts the server, the first word of every error.
	Pkg string
	// Path is the server's executable, Args its arguments.
	Path string
	Args []string
	// Env is added to the test process's environment.
	Env []string
	// Cred is the user the server runs as (nil: the test process's).
	Cred *syscall.Credential
	// Log is the file the server's standard output and error are appended to ("": discarded).
	Log string
	// Ready reports, by returning nil, that the server serves. It is called until it does, with
	// a context that ends two seconds later, a minute at most.
	Ready func(ctx context.Context) error
}

// Server is one server process, started by Start. Its methods are not safe for concurrent use,
// but for Paused and LogTail, and for Running and PID while no Start runs.
type Server struct {
	spec Spec

	cmd  *exec.Cmd     // of the last Start
	done chan struct{} // closed when cmd has been waited for
	last []int         // the processes the last Kill ended, which Start waits to be gone

	mu     sync.Mutex // guards paused
	paused bool       // set by Pause, cleared by Continue, Kill and Stop
}

// New returns a server for spec, not started.
func New(spec Spec) *Server { return &Server{spec: spec} }

// Start starts the server's process, after the processes of a Kill before are gone, in a
// process group of its own; it does not wait until it serves (WaitReady does). The process is
// sent SIGKILL if the test process dies.
func (s *Server) Start() error {
	if s.Running() {
		return errors.New(s.spec.Pkg + ": start of a server that is running")
	}
	if !waitGone(s.last) {
		return fmt.Errorf("%s: the processes of the killed %s are still alive after ten seconds", s.spec.Pkg, s.name())
	}
	cmd := Command(s.spec.Cred, s.spec.Path, s.spec.Args...)
	cmd.SysProcAttr.Setpgid = true
	cmd.Env = append(os.Environ(), s.spec.Env...)
	if s.spec.Log != "" {
		logf, err := os.OpenFile(s.spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("%s: %w", s.spec.Pkg, err)
		}
		defer logf.Close() // the child has its own descriptor
		cmd.Stdout, cmd.Stderr = logf, logf
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start %s: %w", s.spec.Pkg, s.spec.Path, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	done := s.done
	go func() { // owned by s: Kill and Stop wait for it through done
		_ = cmd.Wait()
		close(done)
	}()
	return nil
}

func (s *Server) name() string { return filepath.Base(s.spec.Path) }

// WaitReady waits until the server's Ready check passes, a minute at most; it fails at once,
// with the end of the log, if the process exits first.
func (s *Server) WaitReady() error {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.spec.Ready(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("%s: %s exited:\n%s", s.spec.Pkg, s.name(), s.LogTail(30))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not ready within a minute: %w\n%s", s.spec.Pkg, s.name(), err, s.LogTail(30))
		}
		time.Sleep(20 * time.Millisecond) // a polling pace: the server gives no other sign
	}
}

// Restart starts a server that is not running (killed, or exited), on the data its arguments
// name, and waits until it is ready.
func (s *Server) Restart() error {
	if err := s.Start(); err != nil {
		return err
	}
	return s.WaitReady()
}

// Running reports whether the server's process is alive (a paused one is).
func (s *Server) Running() bool {
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Paused reports whether the server was stopped with Pause and not continued or killed.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

func (s *Server) setPaused(p bool) {
	s.mu.Lock()
	s.paused = p
	s.mu.Unlock()
}

// PID returns the server's process ID, 0 if it is not running.
func (s *Server) PID() int {
	if !s.Running() {
		return 0
	}
	return s.cmd.Process.Pid
}

// Children returns the IDs of the processes the server forked, and theirs, from /proc.
func (s *Server) Children() []int {
	if pid := s.PID(); pid != 0 {
		return descendants(pid)
	}
	return nil
}

// Kill sends SIGKILL to the server and to every process it forked, and waits until they are
// gone: a crash, its data left as it was. The processes are stopped first, all of them, so that
// none forks another that would escape. Kill of a server that is not running is an error.
func (s *Server) Kill() error {
	if !s.Running() {
		return errors.New(s.spec.Pkg + ": kill of a server that is not running")
	}
	s.kill()
	return nil
}

func (s *Server) kill() {
	pid := s.cmd.Process.Pid
	s.last = freeze(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, p := range s.last {
		_ = syscall.Kill(p, syscall.SIGKILL) // one that left the group
	}
	<-s.done
	waitGone(s.last)
	s.setPaused(false)
}

// Pause sends SIGSTOP to the server and every process it forked, and returns once each is
// stopped: alive, holding its connections, but answering nothing, as a server stalled by its
// machine would.
func (s *Server) Pause() error {
	if !s.Running() {
		return errors.New(s.spec.Pkg + ": pause of a server that is not running")
	}
	freeze(s.cmd.Process.Pid)
	s.setPaused(true)
	return nil
}

// Continue sends SIGCONT to a paused server and every process it forked.
func (s *Server) Continue() error {
	if !s.Running() {
		return errors.New(s.spec.Pkg + ": continue of a server that is not running")
	}
	if err := signalTree(s.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("%s: continue %s: %w", s.spec.Pkg, s.name(), err)
	}
	s.setPaused(false)
	return nil
}

// Stop ends a running server: with sig (such as a fast shutdown's SIGINT) when sig is not 0
// and the server is not paused, then SIGKILL (see Kill) if it has not exited within grace.
func (s *Server) Stop(sig syscall.Signal, grace time.Duration) {
	if !s.Running() {
		return
	}
	if sig != 0 && !s.Paused() {
		_ = s.cmd.Process.Signal(sig)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-s.done:
			return
		case <-t.C:
		}
	}
	s.kill()
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.spec.Log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
