// Package pgtest starts throwaway PostgreSQL servers for tests: initdb into a temporary
// directory, a random loopback port, the unix socket in the same directory, fsync off, run as
// the unprivileged user postgres when the test runs as root. The server is stopped by its PID
// when the test ends (also when it fails) and its directory removed; a program or a TestMain
// starts one with Launch and stops it with Stop.
//
// The binaries are Debian's (`apt-get install postgresql`), found at
// /usr/lib/postgresql/<version>/bin, the newest version first, or in the directory that
// CORRAL_POSTGRES_BIN names. Without them a test fails, saying what to install: it never skips.
//
// The server is a real process, so a test can SIGKILL it (Kill, with every backend process
// it forked, so that the data directory can be started again), start it again on the same
// data directory and port (Restart), and stop and resume it (Pause, Continue).
package pgtest

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvBin names the environment variable that selects the directory of the initdb and postgres
// binaries (default: the newest /usr/lib/postgresql/*/bin).
const EnvBin = "CORRAL_POSTGRES_BIN"

// Binaries returns the paths of initdb and postgres, or an error naming the package to install.
func Binaries() (initdb, postgres string, err error) {
	dirs := []string{}
	if d := os.Getenv(EnvBin); d != "" {
		dirs = append(dirs, d)
	} else {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		// Newest first: sort the versions as numbers.
		sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
		dirs = append(dirs, found...)
	}
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if executable(i) && executable(p) {
			return i, p, nil
		}
	}
	return "", "", errors.New("pgtest: no PostgreSQL server binaries (initdb, postgres) in /usr/lib/postgresql/*/bin: " +
		"install them with `apt-get install postgresql`, or set " + EnvBin + " to the directory that holds them")
}

// version returns the major version in a path /usr/lib/postgresql/<version>/bin, 0 if none.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Server is one postgres process (the postmaster) and the backends it forks. Its methods are
// not safe for concurrent use, but for DSN, Running and Paused.
type Server struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int

	dir  string // the temporary directory: data/, the socket, the log
	bin  string // the postgres binary
	cred *syscall.Credential
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for

	mu     sync.Mutex // guards paused
	paused bool       // set by Pause, cleared by Continue and Kill
}

// Start runs initdb in a new temporary directory and starts a server on it, on a free port of
// 127.0.0.1, and returns once it accepts connections. The server is stopped, and its directory
// removed, when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := Launch()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Launch is Start for a program or a TestMain, which has no testing.TB: the caller must call
// Stop.
func Launch() (*Server, error) {
	initdb, bin, err := Binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir, bin: bin, log: filepath.Join(dir, "server.log")}
	if err := s.launch(initdb); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) launch(initdb string) error {
	if os.Geteuid() == 0 {
		// initdb and postgres refuse to run as root.
		var err error
		if s.cred, err = unprivileged(); err != nil {
			return err
		}
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	out, err := s.command(initdb, "-D", s.data(), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
		"--no-locale", "--no-sync").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	if s.Port, err = freePort(); err != nil {
		return err
	}
	if err := s.start(); err != nil {
		return err
	}
	return s.waitReady()
}

// Stop stops the server (see stop) and removes its directory. Start's Cleanup calls it.
func (s *Server) Stop() {
	s.stop()
	_ = os.RemoveAll(s.dir)
}

// unprivileged returns the credentials of the user postgres, which Debian's package creates,
// or of nobody.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
		}
	}
	return nil, errors.New("pgtest: running as root, and there is no user postgres (or nobody) to run the server as: " +
		"install the server with `apt-get install postgresql`, which creates the user")
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// command returns a command running as the server's user, which dies with the test process.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: s.cred}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// freePort returns a free TCP port of 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// settings are the server's: loopback only, the socket in the temporary directory, and no
// fsync (a test's data does not outlive the machine). A SIGKILL of the server still keeps
// every commit it acknowledged: a commit waits until its WAL is written to the kernel, which
// outlives the process (synchronous_commit stays on for that).
func (s *Server) settings() []string {
	return []string{
		"-D", s.data(), "-p", strconv.Itoa(s.Port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + s.dir,
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "dynamic_shared_memory_type=mmap", // in the data directory, not /dev/shm
		"-c", "logging_collector=off",
	}
}

func (s *Server) start() error {
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close() // the child has its own descriptor
	cmd := s.command(s.bin, s.settings()...)
	// The postmaster leads a process group of its own, which Kill and Pause signal whole.
	cmd.SysProcAttr.Setpgid = true
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start %s: %w", s.bin, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	done := s.done
	go func() { // owned by s: waited for through done by stop and Kill
		_ = cmd.Wait()
		close(done)
	}()
	return nil
}

// DSN returns a connection string for the database postgres as the user postgres, over TCP.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
}

// waitReady waits, a minute at most, until the server answers a query.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := s.ping()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("pgtest: postgres exited:\n%s", s.LogTail(30))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: postgres not ready within a minute: %w\n%s", err, s.LogTail(30))
		}
		time.Sleep(20 * time.Millisecond) // a polling pace: the server gives no other sign
	}
}

func (s *Server) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "SELECT 1")
	return err
}

// Running reports whether the postmaster's process is alive.
func (s *Server) Running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Paused reports whether the server was stopped with Pause and not continued.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// PID returns the postmaster's process ID (0 if it is not running).
func (s *Server) PID() int {
	if !s.Running() {
		return 0
	}
	return s.cmd.Process.Pid
}

// Children returns the process IDs of the postmaster's children (its backends and auxiliary
// processes), from /proc.
func (s *Server) Children() []int {
	pid := s.PID()
	if pid == 0 {
		return nil
	}
	return children(pid)
}

// children returns the PIDs of the processes whose parent is ppid.
func children(ppid int) []int {
	var out []int
	for _, pid := range pids() {
		if p, _, ok := stat(pid); ok && p == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// stat returns the parent and the state of process pid, from /proc/<pid>/stat.
func stat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so cut at the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}

// Kill sends SIGKILL to the postmaster and to every process it forked, and waits until they
// are gone: a crash, the data directory left as it was, which Restart can start again (a
// backend left running would hold the server's shared memory and stop that).
func (s *Server) Kill(tb testing.TB) {
	tb.Helper()
	if !s.Running() {
		tb.Fatal("pgtest: Kill of a server that is not running")
	}
	s.killAll()
	s.mu.Lock()
	s.paused = false
	s.mu.Unlock()
}

// killAll stops the postmaster and its processes where they are (freeze), so that none can
// fork another, then kills every one of them, and waits until they are gone.
func (s *Server) killAll() {
	pid := s.cmd.Process.Pid
	tree := freeze(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL) // the postmaster's group
	for _, p := range tree {
		_ = syscall.Kill(p, syscall.SIGKILL) // a backend, which leads a session of its own
	}
	<-s.done
	waitGone(tree[1:])
}

// freeze sends SIGSTOP to the process group that leader leads and to every process it forked,
// and theirs, until each is stopped (or gone), and returns them, leader first. A stopped process
// forks nothing, so the list is then complete: a list taken while the postmaster runs misses the
// backend it forks next. The group alone is not enough: each backend calls setsid.
func freeze(leader int) []int {
	_ = syscall.Kill(-leader, syscall.SIGSTOP)
	tree := []int{leader}
	in := map[int]bool{leader: true}
	for {
		waitStopped(tree)
		added := false
		for _, pid := range pids() {
			if ppid, _, ok := stat(pid); ok && in[ppid] && !in[pid] {
				_ = syscall.Kill(pid, syscall.SIGSTOP)
				tree, in[pid], added = append(tree, pid), true, true
			}
		}
		if !added {
			return tree
		}
	}
}

// pids returns the IDs of the processes in /proc.
func pids() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// waitStopped waits, ten seconds at most, until each of pids is stopped or gone.
func waitStopped(pids []int) {
	waitState(pids, func(state byte, ok bool) bool { return !ok || strings.IndexByte("TtZX", state) >= 0 })
}

// waitGone waits, ten seconds at most, until none of pids is a live process (gone, or a zombie
// left for its new parent to reap).
func waitGone(pids []int) {
	waitState(pids, func(state byte, ok bool) bool { return !ok || state == 'Z' || state == 'X' })
}

// waitState waits, ten seconds at most, until done holds for the state of each of pids.
func waitState(pids []int, done func(state byte, ok bool) bool) {
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			if _, state, ok := stat(pid); done(state, ok) {
				break
			}
			time.Sleep(time.Millisecond) // a polling pace: these are not our children to wait for
		}
	}
}

// Restart starts a killed server again, on its data directory and port, and returns once it
// accepts connections (after its crash recovery). It first waits until the old server's shared
// memory is released: a process still holding it would stop the new server from starting.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if s.Running() {
		tb.Fatal("pgtest: Restart of a server that is running")
	}
	if err := s.waitReleased(); err != nil {
		tb.Fatal(err)
	}
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
	if err := s.waitReady(); err != nil {
		tb.Fatal(err)
	}
}

// waitReleased waits, ten seconds at most, until no process holds the shared memory segment
// that postmaster.pid names (none, after a clean shutdown).
func (s *Server) waitReleased() error {
	b, err := os.ReadFile(filepath.Join(s.data(), "postmaster.pid"))
	if err != nil {
		return nil // a clean shutdown removes it
	}
	// The seventh line holds the segment's key and ID.
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 || len(strings.Fields(lines[6])) != 2 {
		return nil
	}
	id := strings.Fields(lines[6])[1]
	for deadline := time.Now().Add(10 * time.Second); ; {
		n := attached(id)
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: %d processes still hold the old server's shared memory (ID %s) after ten seconds", n, id)
		}
		time.Sleep(time.Millisecond) // a polling pace: the kernel gives no other sign
	}
}

// attached returns how many processes have the System V shared memory segment id attached,
// from /proc/sysvipc/shm (0 if there is no such segment).
func attached(id string) int {
	b, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		// key shmid perms size cpid lpid nattch ...
		if f := strings.Fields(line); len(f) > 6 && f[1] == id {
			n, _ := strconv.Atoi(f[6])
			return n
		}
	}
	return 0
}

// Pause sends SIGSTOP to the postmaster and to every process it forked: they are alive and hold
// their connections, but answer nothing, as a server stalled by its machine would.
func (s *Server) Pause(tb testing.TB) {
	tb.Helper()
	if !s.Running() {
		tb.Fatal("pgtest: Pause of a server that is not running")
	}
	s.signalAll(tb, syscall.SIGSTOP)
	s.mu.Lock()
	s.paused = true
	s.mu.Unlock()
}

// Continue sends SIGCONT to a paused server and its processes.
func (s *Server) Continue(tb testing.TB) {
	tb.Helper()
	s.signalAll(tb, syscall.SIGCONT)
	s.mu.Lock()
	s.paused = false
	s.mu.Unlock()
}

// signalAll sends sig to the postmaster and every process it forked: SIGSTOP freezes the
// tree (see freeze), so that no backend forked meanwhile escapes it.
func (s *Server) signalAll(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	pid := s.cmd.Process.Pid
	if sig == syscall.SIGSTOP {
		freeze(pid)
		return
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		tb.Fatalf("pgtest: %v to postgres: %v", sig, err)
	}
	for _, p := range children(pid) {
		_ = syscall.Kill(p, sig) // a backend may have just exited
	}
}

// stop ends the server: a fast shutdown (SIGINT), which removes its
// shared memory, and SIGKILL if it is paused or has not stopped within ten seconds.
func (s *Server) stop() {
	if !s.Running() {
		return
	}
	if s.Paused() {
		s.killAll()
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.killAll()
	}
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
