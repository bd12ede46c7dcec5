package testserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// RedisEnv names the environment variable that selects the redis-server binary (default: the
// one on PATH).
const RedisEnv = "CORRAL_REDIS_SERVER"

// RedisBinary returns the path of redis-server, or an error, beginning with pkg, naming the
// package to install.
func RedisBinary(pkg string) (string, error) {
	paths, err := Binary{Pkg: pkg, Names: []string{"redis-server"}, Env: RedisEnv, Package: "redis-server"}.Find()
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// Redis is a throwaway redis-server: a temporary directory, a free port of 127.0.0.1 (whose
// cluster bus port, 10000 more, is free too), the append-only file on, no RDB snapshots. Its
// methods are not safe for concurrent use, but for Addr and those of Server that say so.
type Redis struct {
	*Server
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	// Fsync is the server's appendfsync setting: "always" or "everysec".
	Fsync string
	// Dir is the temporary directory: the append-only file, the log server.log.
	Dir string
}

// StartRedis starts a server with appendfsync fsync ("always" if empty) and the extra settings
// args, and returns once ready(ctx, addr) passes (see Spec.Ready); errors begin with pkg. The
// caller must call Stop, also after an error if the returned server is not nil.
func StartRedis(pkg, fsync string, ready func(ctx context.Context, addr string) error, args ...string) (*Redis, error) {
	if fsync == "" {
		fsync = "always"
	}
	bin, err := RedisBinary(pkg)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", pkg+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	r := &Redis{Dir: dir, Fsync: fsync}
	r.Server = New(Spec{Pkg: pkg, Path: bin, Log: filepath.Join(dir, "server.log")})
	if r.Port, err = FreePort(10000); err != nil {
		return r, err
	}
	r.spec.Args = append([]string{"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--dir", dir, "--appendonly", "yes", "--appendfsync", fsync, "--save", "",
		"--protected-mode", "no", "--daemonize", "no", "--logfile", "",
		"--repl-diskless-sync-delay", "0"}, // a replica syncs at once, not after 5s
		args...)
	r.spec.Ready = func(ctx context.Context) error { return ready(ctx, r.Addr()) }
	return r, r.Restart()
}

// Addr returns the server's host:port.
func (r *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// Stop kills the server (see Kill), if it runs, and removes its directory.
func (r *Redis) Stop() {
	r.Server.Stop(0, 0)
	_ = os.RemoveAll(r.Dir)
}
