// Package redisserver starts one throwaway redis-server for the benchmarks of this module: a
// temporary directory, a random loopback port, appendonly yes with appendfsync always (the
// setting under which an acknowledged job survives a crash of the server), no RDB snapshots,
// stopped by its PID and its directory removed.
//
// It is a small copy of what queue/redis/internal/redistest does for that module's tests
// (which also kills, restarts and pauses its servers): redistest is internal to queue/redis,
// and exporting it would add a package to that module's public API for a benchmark. Keep the
// two servers' settings alike.
//
// The binary is Debian's (`apt-get install redis-server`), on PATH or at CORRAL_REDIS_SERVER.
package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Start starts a server, stopped when b ends, and returns its host:port.
func Start(b testing.TB) string {
	b.Helper()
	bin := os.Getenv("CORRAL_REDIS_SERVER")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			b.Fatal(errors.New("redisserver: no redis-server on PATH: install it with `apt-get install redis-server`"))
		}
	}
	dir := b.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // owned by the cleanup below, which waits for it
	b.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(time.Minute); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			b.Fatal(fmt.Errorf("redisserver: not ready within a minute: %w", err))
		}
		time.Sleep(10 * time.Millisecond) // a polling pace: the server gives no other sign
	}
}
