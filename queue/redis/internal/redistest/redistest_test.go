package redistest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client returns a client on s with one connection and no retries, closed when the test ends.
func client(t *testing.T, s *redistest.Server) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1, PoolSize: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestKillRestartKeepsWrites: with appendfsync always, an acknowledged write survives a
// SIGKILL; the restarted server serves on the same port and directory.
func TestKillRestartKeepsWrites(t *testing.T) {
	s := redistest.Start(t, "")
	if s.Fsync != "always" {
		t.Fatalf("Fsync = %q, want the default always", s.Fsync)
	}
	ctx := ctxFor(t, 30*time.Second)
	c := client(t, s)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	port := s.Port
	s.Kill(t)
	if err := c.Get(ctx, "k").Err(); err == nil {
		t.Fatal("GET on a killed server succeeded")
	}
	s.Restart(t)
	if s.Port != port {
		t.Errorf("restarted on port %d, want %d", s.Port, port)
	}
	if v, err := client(t, s).Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("after restart: GET k = %q, %v; want \"v\"", v, err)
	}
}

// TestPauseContinue: a paused server answers nothing (a command times out); once continued it
// answers again.
func TestPauseContinue(t *testing.T) {
	s := redistest.Start(t, "everysec")
	c := client(t, s)
	if err := c.Ping(ctxFor(t, 10*time.Second)).Err(); err != nil {
		t.Fatal(err)
	}
	s.Pause(t)
	if err := c.Ping(ctxFor(t, 300*time.Millisecond)).Err(); err == nil {
		t.Fatal("a paused server answered")
	}
	s.Continue(t)
	if v, err := client(t, s).Ping(ctxFor(t, 10*time.Second)).Result(); err != nil || v != "PONG" {
		t.Errorf("after Continue: %q, %v; want PONG", v, err)
	}
}

// TestReplicaPromote: StartReplica returns a replica in sync that refuses writes; a write
// acknowledged by it (WAIT) is readable on it; promoted, it takes writes.
func TestReplicaPromote(t *testing.T) {
	m := redistest.Start(t, "")
	r := redistest.StartReplica(t, m)
	ctx := ctxFor(t, 30*time.Second)
	mc, rc := client(t, m), client(t, r)
	if err := mc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := mc.Wait(ctx, 1, 10*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d, %v; want 1 replica", n, err)
	}
	if v, err := rc.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET k on the replica = %q, %v; want \"v\"", v, err)
	}
	if err := rc.Set(ctx, "k", "w", 0).Err(); err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Fatalf("SET on the replica: %v; want READONLY", err)
	}
	r.Promote(t)
	if err := rc.Set(ctx, "k", "w", 0).Err(); err != nil {
		t.Fatalf("SET on the promoted replica: %v", err)
	}
}

// TestMissingBinary: without redis-server the error names the Debian package, also when
// CORRAL_REDIS_SERVER names no executable.
func TestMissingBinary(t *testing.T) {
	t.Run("Path", func(t *testing.T) {
		t.Setenv(redistest.EnvBin, "")
		t.Setenv("PATH", t.TempDir())
		if _, err := redistest.Binary(); err == nil || !strings.Contains(err.Error(), "apt-get install redis-server") {
			t.Errorf("Binary with an empty PATH: %v, want an error naming the package redis-server", err)
		}
	})
	t.Run("Env", func(t *testing.T) {
		t.Setenv(redistest.EnvBin, t.TempDir()) // a directory, not a binary
		if _, err := redistest.Binary(); err == nil || !strings.Contains(err.Error(), "apt-get install redis-server") {
			t.Errorf("Binary with %s a directory: %v, want an error naming the package redis-server", redistest.EnvBin, err)
		}
		if _, err := redistest.Launch(""); err == nil {
			t.Error("Launch without a binary succeeded")
		}
	})
}

// TestBinaryFound: this machine's redis-server is found (the tests need it).
func TestBinaryFound(t *testing.T) {
	p, err := redistest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p, "redis-server") {
		t.Errorf("Binary() = %s", p)
	}
}

// TestCluster: StartCluster's masters serve every slot between them: keys of different slots
// are written and read through a cluster client.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	if len(cl.Masters) != 3 || len(cl.Addrs()) != 3 {
		t.Fatalf("%d masters, %d addresses; want 3", len(cl.Masters), len(cl.Addrs()))
	}
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxFor(t, 30*time.Second)
	nodes := map[int64]bool{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if err := c.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		slot, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		nodes[master(slot)] = true
	}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if v, err := c.Get(ctx, k).Result(); err != nil || v != k {
			t.Errorf("GET %s = %q, %v", k, v, err)
		}
	}
	if len(nodes) < 2 {
		t.Errorf("8 keys fell on %d master(s) of 3, want at least 2", len(nodes))
	}
}

// master returns the index of the master that StartCluster(tb, 3) gives slot.
func master(slot int64) int64 { return min(slot/(16384/3), 2) }

// TestReplicatedClusterFailover: StartReplicatedCluster's nine nodes serve every slot with
// two replicas behind each master; a write confirmed by WAIT 2 survives a SIGKILL of its
// master, whose replica 0 the cluster promotes by itself within a bound (NodeTimeout, the
// election, and slack for a loaded machine), and replica 1 follows the new master (WAIT 1
// answers 1); the killed master restarted on its store comes back as a replica.
func TestReplicatedClusterFailover(t *testing.T) {
	cl := redistest.StartReplicatedCluster(t, 3, 2, redistest.NodeTimeout)
	if len(cl.Masters) != 3 || len(cl.Replicas) != 6 || len(cl.Nodes()) != 9 || len(cl.Addrs()) != 9 {
		t.Fatalf("%d masters, %d replicas, %d nodes; want 3, 6, 9", len(cl.Masters), len(cl.Replicas), len(cl.Nodes()))
	}
	for i, r := range cl.Replicas {
		got, err := client(t, r).ConfigGet(ctxFor(t, 10*time.Second), "cluster-replica-no-failover").Result()
		if want := map[bool]string{true: "no", false: "yes"}[i < 3]; err != nil || got["cluster-replica-no-failover"] != want {
			t.Fatalf("replica %d: cluster-replica-no-failover %v, %v; want %s", i, got, err, want)
		}
	}
	const key = "{q}:k"
	m := cl.MasterOf(t, key)
	if m > 2 {
		t.Fatalf("MasterOf(%q) = node %d, want a master (0-2) before any failover", key, m)
	}
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxFor(t, time.Minute)
	mc := client(t, cl.Masters[m])
	if err := mc.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := mc.Wait(ctx, 2, 10*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 on the master: %d, %v; want 2", n, err)
	}
	cl.Masters[m].Kill(t)
	killed := time.Now()
	var now int
	for now = cl.MasterOf(t, key); now == m; now = cl.MasterOf(t, key) {
		// Redis's own election: CI saw it take over 20 s with two test runs side by side.
		if time.Since(killed) > 30*redistest.NodeTimeout {
			t.Fatalf("no failover within %v of the kill", 30*redistest.NodeTimeout)
		}
		time.Sleep(50 * time.Millisecond) // a polling pace: the cluster gives no other sign
	}
	t.Logf("failover to node %d after %v", now, time.Since(killed).Round(time.Millisecond))
	if now != m+3 {
		t.Errorf("the slot went to node %d, want %d, the killed master's replica 0 (replica 1, node %d, does not stand for election)", now, m+3, m+6)
	}
	var v string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		// A ClusterClient reloads the slots on MOVED and once a minute; a dead master sends
		// no MOVED, and a node asked just after the election may not have heard of it yet:
		// reload before every try, as the queue's backend does after a refused connection.
		c.ReloadState(ctx)
		if v, err = c.Get(ctx, key).Result(); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond) // a polling pace
	}
	if err != nil || v != "v" {
		t.Fatalf("GET after the failover = %q, %v; want \"v\"", v, err)
	}
	nc := client(t, cl.Nodes()[now])
	if err := nc.Set(ctx, key, "w", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := nc.Wait(ctx, 1, 30*time.Second).Result(); err != nil || n != 1 {
		t.Errorf("WAIT 1 on the new master: %d, %v; want 1, its fellow replica following it", n, err)
	}
	cl.Masters[m].Restart(t)
	info := ""
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		info, err = client(t, cl.Masters[m]).Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up") {
			return
		}
		time.Sleep(50 * time.Millisecond) // a polling pace
	}
	t.Errorf("the restarted master is not a replica in sync: %v\n%s", err, info)
}
