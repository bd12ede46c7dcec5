package testserver

import (
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
	"syscall"
)

// Binary says where to find a server's executables.
type Binary struct {
	// Pkg names the package that looks, the first word of Find's error.
	Pkg string
	// Names are the executables, which must all be in one directory.
	Names []string
	// Env names an environment variable that, when set, is the only place looked in: the
	// directory that holds Names, or the path of the executable when there is one name.
	Env string
	// Dirs is a glob of directories looked in before PATH, the highest version first (the
	// last element of a directory's path that is a number).
	Dirs string
	// Package is the Debian package that installs the executables, named by Find's error.
	Package string
}

// Find returns the paths of b's executables, in the order of Names, or an error naming the
// package to install and the environment variable to set.
func (b Binary) Find() ([]string, error) {
	if v := os.Getenv(b.Env); v != "" {
		if fi, err := os.Stat(v); err == nil && !fi.IsDir() && len(b.Names) == 1 && executable(v) {
			return []string{v}, nil
		}
		if paths, ok := in(v, b.Names); ok {
			return paths, nil
		}
		return nil, b.missing(b.Env + "=" + v + " names no " + strings.Join(b.Names, " and "))
	}
	if b.Dirs != "" {
		dirs, _ := filepath.Glob(b.Dirs)
		sort.SliceStable(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
		for _, d := range dirs {
			if paths, ok := in(d, b.Names); ok {
				return paths, nil
			}
		}
	}
	if p, err := exec.LookPath(b.Names[0]); err == nil {
		if paths, ok := in(filepath.Dir(p), b.Names); ok {
			return paths, nil
		}
	}
	where := "PATH"
	if b.Dirs != "" {
		where = b.Dirs + " or on PATH"
	}
	return nil, b.missing("no " + strings.Join(b.Names, " and ") + " in " + where)
}

func (b Binary) missing(what string) error {
	to := "its path"
	if len(b.Names) > 1 {
		to = "the directory that holds them"
	}
	return errors.New(b.Pkg + ": " + what + ": install with `apt-get install " + b.Package +
		"`, or set " + b.Env + " to " + to)
}

// in returns the paths of names in dir, if each is an executable file there.
func in(dir string, names []string) ([]string, bool) {
	var paths []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if !executable(p) {
			return nil, false
		}
		paths = append(paths, p)
	}
	return paths, true
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// version returns the last element of dir's path that is a number, 0 if none.
func version(dir string) int {
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if n, err := strconv.Atoi(filepath.Base(d)); err == nil {
			return n
		}
	}
	return 0
}

// FreePort returns a free TCP port p of 127.0.0.1 such that p+off is free too for each of
// offsets (a server that also listens on a port at a fixed distance, as Redis Cluster's bus).
func FreePort(offsets ...int) (int, error) {
	var last error
	for range 100 {
		ports, err := FreePorts(1)
		if err != nil {
			return 0, err
		}
		if last = free(ports[0], offsets); last == nil {
			return ports[0], nil
		}
	}
	return 0, fmt.Errorf("testserver: no free port with ports %v above it free too in 100 tries: %w", offsets, last)
}

// free reports as an error whether a port at one of offsets from p is taken (or out of range).
func free(p int, offsets []int) error {
	for _, off := range offsets {
		if p+off > 65535 {
			return fmt.Errorf("port %d out of range", p+off)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+off))
		if err != nil {
			return err
		}
		_ = l.Close()
	}
	return nil
}

// FreePorts returns n distinct free TCP ports of 127.0.0.1. A port is free when it returns;
// another process may take it before the server does.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testserver: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Command returns a command that is sent SIGKILL when the test process dies (even when the
// test binary is killed), running as cred (nil: as the test process's user).
func Command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
	return cmd
}

// Unprivileged returns nil when the test process is not root, and otherwise the credentials
// of the first of users that exists, for a server that refuses to run as root.
func Unprivileged(users ...string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range users {
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
	return nil, fmt.Errorf("testserver: running as root, and none of the users %v exists to run the server as", users)
}
