package testserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PostgresEnv names the environment variable that selects the directory of the initdb and
// postgres binaries (default: the newest /usr/lib/postgresql/*/bin).
const PostgresEnv = "CORRAL_POSTGRES_BIN"

// PostgresBinaries returns the paths of initdb and postgres, or an error, beginning with pkg,
// naming the package to install.
func PostgresBinaries(pkg string) (initdb, postgres string, err error) {
	paths, err := Binary{Pkg: pkg, Names: []string{"initdb", "postgres"}, Env: PostgresEnv,
		Dirs: "/usr/lib/postgresql/*/bin", Package: "postgresql"}.Find()
	if err != nil {
		return "", "", err
	}
	return paths[0], paths[1], nil
}

// Postgres is a throwaway PostgreSQL server: initdb into a temporary directory, a free port of
// 127.0.0.1, the unix socket in the same directory, fsync off, run as the user postgres (or
// nobody) when the test runs as root. Its methods are not safe for concurrent use, but for
// DSN and those of Server that say so.
type Postgres struct {
	*Server
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	// Dir is the temporary directory: data/, the socket, the log server.log.
	Dir string
}

// StartPostgres runs initdb in a new temporary directory, starts a server on it and returns
// once ready(ctx, dsn) passes (see Spec.Ready); errors begin with pkg. The caller must call
// Stop, also after an error if the returned server is not nil.
func StartPostgres(pkg string, ready func(ctx context.Context, dsn string) error) (*Postgres, error) {
	initdb, bin, err := PostgresBinaries(pkg)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", pkg+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	p := &Postgres{Dir: dir}
	p.Server = New(Spec{Pkg: pkg, Path: bin, Env: []string{"LC_ALL=C"}, Log: filepath.Join(dir, "server.log")})
	return p, p.launch(initdb, ready)
}

func (p *Postgres) launch(initdb string, ready func(ctx context.Context, dsn string) error) error {
	spec := &p.Server.spec
	var err error
	// initdb and postgres refuse to run as root.
	if spec.Cred, err = Unprivileged("postgres", "nobody"); err != nil {
		return fmt.Errorf("%s: %w: install the server with `apt-get install postgresql`, which creates the user postgres", spec.Pkg, err)
	}
	if spec.Cred != nil {
		if err := os.Chown(p.Dir, int(spec.Cred.Uid), int(spec.Cred.Gid)); err != nil {
			return fmt.Errorf("%s: %w", spec.Pkg, err)
		}
	}
	cmd := Command(spec.Cred, initdb, "-D", p.data(), "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--no-locale", "--no-sync")
	cmd.Env = append(os.Environ(), spec.Env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: initdb: %w\n%s", spec.Pkg, err, out)
	}
	if p.Port, err = FreePort(); err != nil {
		return err
	}
	spec.Args = p.settings()
	spec.Ready = func(ctx context.Context) error { return ready(ctx, p.DSN()) }
	if err := p.Server.Start(); err != nil {
		return err
	}
	return p.WaitReady()
}

func (p *Postgres) data() string { return filepath.Join(p.Dir, "data") }

// settings are the server's: loopback only, the socket in the temporary directory, and no
// fsync (a test's data does not outlive the machine). A SIGKILL of the server still keeps
// every commit it acknowledged: a commit waits until its WAL is written to the kernel, which
// outlives the process (synchronous_commit stays on for that).
func (p *Postgres) settings() []string {
	return []string{
		"-D", p.data(), "-p", strconv.Itoa(p.Port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + p.Dir,
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "dynamic_shared_memory_type=mmap", // in the data directory, not /dev/shm
		"-c", "logging_collector=off",
	}
}

// DSN returns a connection string for the database postgres as the user postgres, over TCP.
func (p *Postgres) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.Port)
}

// Restart starts a killed server again, on its data directory and port, and returns once it
// is ready (after its crash recovery). It first waits until the old server's shared memory is
// released: a process still holding it would stop the new server from starting.
func (p *Postgres) Restart() error {
	if err := p.waitReleased(); err != nil {
		return err
	}
	return p.Server.Restart()
}

// waitReleased waits, ten seconds at most, until no process holds the shared memory segment
// that postmaster.pid names (there is none after a clean shutdown).
func (p *Postgres) waitReleased() error {
	b, err := os.ReadFile(filepath.Join(p.data(), "postmaster.pid"))
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
			return fmt.Errorf("%s: %d processes still hold the old server's shared memory (ID %s) after ten seconds",
				p.spec.Pkg, n, id)
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

// Stop ends the server, with a fast shutdown (SIGINT), which removes its shared memory, or
// SIGKILL if it is paused or has not stopped within ten seconds, and removes its directory.
func (p *Postgres) Stop() {
	p.Server.Stop(syscall.SIGINT, 10*time.Second)
	_ = os.RemoveAll(p.Dir)
}
