// Package natstest starts throwaway nats-server processes with JetStream for tests: one server,
// or a cluster of them, each on a random loopback port with its store in a t.TempDir(), killed
// when the test ends (also when it fails). The binary is Debian's nats-server
// (`apt-get install nats-server`), found on PATH, or the one CORRAL_NATS_SERVER names. Without
// it a test fails, saying what to install: it never skips.
//
// The servers are real processes, so a test can SIGKILL, restart, SIGSTOP and SIGCONT them.
// The process handling is corral's internal/testserver; this package adds JetStream's
// readiness check, clusters and testing.TB.
package natstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/testserver"
	"github.com/corral-go/corral/queue/jetstream/internal/serverversion"
)

// EnvServer names the environment variable that selects the nats-server binary (default: the
// one on PATH).
const EnvServer = "CORRAL_NATS_SERVER"

// Binary returns the path of the nats-server binary, or an error saying how to install it.
func Binary() (string, error) {
	paths, err := testserver.Binary{Pkg: "natstest", Names: []string{"nats-server"}, Env: EnvServer,
		Package: "nats-server"}.Find()
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// Node is one nats-server process. Its methods are not safe for concurrent use, but for Running
// and Paused.
type Node struct {
	// URL is the node's client URL.
	URL string
	// Name is the node's server name.
	Name string
	// Monitor is the node's HTTP monitoring URL (see Replicas).
	Monitor string

	s *testserver.Server
}

// Cluster is one node, or several nodes routed to each other as one JetStream cluster.
type Cluster struct {
	Nodes []*Node
}

// Start starts one nats-server with JetStream and returns it (a Cluster of one node).
func Start(tb testing.TB) *Cluster { return StartCluster(tb, 1) }

// StartCluster starts n nats-servers with JetStream on loopback, routed as one cluster when n > 1,
// and waits until JetStream answers on every node.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	ports, err := testserver.FreePorts(3 * n) // clients, routes, monitoring
	if err != nil {
		tb.Fatal(err)
	}
	// The stores' directories are made before the kill is registered, so that the kill (a
	// cleanup, run last-registered first) ends the servers before their directories are
	// removed: a server still writing makes the removal fail.
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = tb.TempDir()
	}
	c := &Cluster{}
	tb.Cleanup(c.kill)
	var routes []string
	for i := range n {
		routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(ports[n+i]))
	}
	prefix := Prefix(tb)
	for i := range n {
		dir := dirs[i]
		nd := &Node{
			URL:     "nats://127.0.0.1:" + strconv.Itoa(ports[i]),
			Name:    fmt.Sprintf("%s-n%d", prefix, i),
			Monitor: "http://127.0.0.1:" + strconv.Itoa(ports[2*n+i]),
		}
		args := []string{"-js", "-sd", filepath.Join(dir, "store"), "-a", "127.0.0.1",
			"-p", strconv.Itoa(ports[i]), "-m", strconv.Itoa(ports[2*n+i]), "-n", nd.Name}
		if n > 1 {
			args = append(args, "--cluster_name", prefix, "--cluster", routes[i],
				"--routes", strings.Join(routes, ","))
		}
		nd.s = testserver.New(testserver.Spec{Pkg: "natstest", Path: bin, Args: args,
			Log: filepath.Join(dir, "server.log"), Ready: nd.ping})
		c.Nodes = append(c.Nodes, nd)
	}
	for _, nd := range c.Nodes {
		if err := nd.s.Start(); err != nil {
			tb.Fatal(err)
		}
	}
	c.WaitReady(tb)
	return c
}

// URLs returns the client URLs of every node, comma-separated, as nats.Connect takes them.
func (c *Cluster) URLs() string {
	var us []string
	for _, nd := range c.Nodes {
		us = append(us, nd.URL)
	}
	return strings.Join(us, ",")
}

// WaitReady waits (up to a minute for each) until JetStream answers on every running, unpaused
// node; for a cluster, until the meta leader is elected.
func (c *Cluster) WaitReady(tb testing.TB) {
	tb.Helper()
	for _, nd := range c.Nodes {
		if !nd.Running() || nd.Paused() {
			continue
		}
		if err := nd.s.WaitReady(); err != nil {
			tb.Fatalf("%v (node %s)", err, nd.Name)
		}
	}
}

// ping asks nd's JetStream for the account's info, which needs a meta leader in a cluster.
func (nd *Node) ping(ctx context.Context) error {
	nc, err := nats.Connect(nd.URL, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		return err
	}
	_, err = js.AccountInfo(ctx)
	return err
}

// Running reports whether nd's process is alive.
func (nd *Node) Running() bool { return nd.s.Running() }

// Paused reports whether nd was stopped with Pause and not continued.
func (nd *Node) Paused() bool { return nd.s.Paused() }

// Kill sends SIGKILL to nd and waits for it to exit: a crash, the store left as it was.
func (nd *Node) Kill(tb testing.TB) {
	tb.Helper()
	if err := nd.s.Kill(); err != nil {
		tb.Fatalf("%v (node %s)", err, nd.Name)
	}
}

// Restart starts a killed node again, on its port and its store, and waits until it and the
// other running, unpaused nodes of c are ready.
func (nd *Node) Restart(tb testing.TB, c *Cluster) {
	tb.Helper()
	if err := nd.s.Start(); err != nil {
		tb.Fatalf("%v (node %s)", err, nd.Name)
	}
	c.WaitReady(tb)
}

// Pause sends SIGSTOP to nd: the process is alive and holds its connections, but answers
// nothing, as a server stalled by its machine would.
func (nd *Node) Pause(tb testing.TB) {
	tb.Helper()
	if err := nd.s.Pause(); err != nil {
		tb.Fatalf("%v (node %s)", err, nd.Name)
	}
}

// Continue sends SIGCONT to a paused nd.
func (nd *Node) Continue(tb testing.TB) {
	tb.Helper()
	if err := nd.s.Continue(); err != nil {
		tb.Fatalf("%v (node %s)", err, nd.Name)
	}
}

// LogTail returns the last n lines of nd's log.
func (nd *Node) LogTail(n int) string { return nd.s.LogTail(n) }

// kill ends every node's process and waits for it (Cleanup).
func (c *Cluster) kill() {
	for _, nd := range c.Nodes {
		nd.s.Stop(0, 0)
	}
}

// Connect returns a client connection to the cluster (every node's URL), closed when the test
// ends. Extra options are applied after the defaults (which retry reconnecting for ever, every
// 50ms).
func (c *Cluster) Connect(tb testing.TB, opts ...nats.Option) *nats.Conn {
	tb.Helper()
	all := append([]nats.Option{
		nats.Name(tb.Name()),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(50 * time.Millisecond),
	}, opts...)
	nc, err := nats.Connect(c.URLs(), all...)
	if err != nil {
		tb.Fatalf("natstest: connect %s: %v", c.URLs(), err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// Prefix returns a fresh token, unique to this call, to name streams, subjects and clusters.
// It contains only [A-Z0-9].
func Prefix(tb testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	return "T" + strings.ToUpper(hex.EncodeToString(b[:]))
}

// VersionAtLeast reports whether the server nc is connected to is at least major.minor.patch.
func VersionAtLeast(nc *nats.Conn, major, minor, patch int) bool {
	return serverversion.AtLeast(nc.ConnectedServerVersion(), major, minor, patch)
}
