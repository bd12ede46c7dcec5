// Package pgserver starts one throwaway PostgreSQL server for the benchmarks of this module:
// initdb into a temporary directory, a random loopback port, fsync off, run as the user
// postgres when the benchmark runs as root, stopped by its PID and its directory removed.
//
// It is a small copy of what queue/postgres/internal/pgtest does for that module's tests (which
// also kills, restarts and pauses its servers): pgtest is internal to queue/postgres, and
// exporting it would add a package to that module's public API, to be documented and kept
// compatible, for the sake of a benchmark. Keep the two servers' settings alike.
//
// The binaries are Debian's (`apt-get install postgresql`), the newest
// /usr/lib/postgresql/<version>/bin, or the directory CORRAL_POSTGRES_BIN names.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running postgres process.
type Server struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int

	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
}

// Start starts a server, stopped (and its directory removed) when tb ends; it fails tb, naming
// the package to install, if there are no server binaries.
func Start(tb testing.TB) *Server {
	tb.Helper()
	initdb, bin, err := binaries()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pgserver-")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{dir: dir}
	tb.Cleanup(s.stop)
	if err := s.launch(initdb, bin); err != nil {
		tb.Fatal(err)
	}
	return s
}

// DSN returns a connection string for the database postgres as the user postgres, over TCP.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
}

func binaries() (initdb, postgres string, err error) {
	var dirs []string
	if d := os.Getenv("CORRAL_POSTGRES_BIN"); d != "" {
		dirs = []string{d}
	} else {
		dirs, _ = filepath.Glob("/usr/lib/postgresql/*/bin")
		major := func(d string) int { n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return n }
		sort.Slice(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	}
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if _, err1 := os.Stat(i); err1 == nil {
			if _, err2 := os.Stat(p); err2 == nil {
				return i, p, nil
			}
		}
	}
	return "", "", errors.New("pgserver: no PostgreSQL server binaries (initdb, postgres) in /usr/lib/postgresql/*/bin: " +
		"install them with `apt-get install postgresql`, or set CORRAL_POSTGRES_BIN to their directory")
}

func (s *Server) launch(initdb, bin string) error {
	var cred *syscall.Credential
	if os.Geteuid() == 0 { // initdb and postgres refuse to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("pgserver: running as root and no user postgres to run the server as "+
				"(`apt-get install postgresql` creates it): %w", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
		if err := os.Chown(s.dir, int(uid), int(gid)); err != nil {
			return fmt.Errorf("pgserver: %w", err)
		}
	}
	command := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		return cmd
	}
	data := filepath.Join(s.dir, "data")
	if out, err := command(initdb, "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8",
		"--no-locale", "--no-sync").CombinedOutput(); err != nil {
		return fmt.Errorf("pgserver: initdb: %w\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("pgserver: free port: %w", err)
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	logf, err := os.Create(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	defer logf.Close() // the child has its own descriptor
	// The settings of pgtest: loopback only, no fsync (nothing outlives the benchmark).
	s.cmd = command(bin, "-D", data, "-p", strconv.Itoa(s.Port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+s.dir,
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "dynamic_shared_memory_type=mmap",
		"-c", "logging_collector=off")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("pgserver: start %s: %w", bin, err)
	}
	s.done = make(chan struct{})
	go func() { // owned by s: stop waits for it through done
		_ = s.cmd.Wait()
		close(s.done)
	}()
	return s.waitReady()
}

// waitReady waits, a minute at most, until the server answers a query.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgx.Connect(ctx, s.DSN())
		if err == nil {
			_, err = c.Exec(ctx, "SELECT 1")
			_ = c.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			return fmt.Errorf("pgserver: postgres exited:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgserver: postgres not ready within a minute: %w", err)
		}
		time.Sleep(20 * time.Millisecond) // a polling pace: the server gives no other sign
	}
}

// stop ends the server by its PID (a fast shutdown, SIGKILL after ten seconds) and removes its
// directory.
func (s *Server) stop() {
	if s.done != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		t := time.NewTimer(10 * time.Second)
		select {
		case <-s.done:
		case <-t.C:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		t.Stop()
	}
	_ = os.RemoveAll(s.dir)
}
