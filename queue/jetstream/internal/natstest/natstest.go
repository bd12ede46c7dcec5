// Package natstest starts throwaway nats-server processes with JetStream for tests: one server,
// or a cluster of them, each on a random loopback port with its store in a t.TempDir(), killed
// by PID when the test ends (also when it fails). The binary is Debian's nats-server
// (`apt-get install nats-server`), found on PATH, or the one CORRAL_NATS_SERVER names. Without
// it a test fails, saying what to install: it never skips.
//
// The servers are real processes, so a test can SIGKILL, restart, SIGSTOP and SIGCONT them.
package natstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/jetstream/internal/serverversion"
)

// EnvServer names the environment variable that selects the nats-server binary (default: the
// one on PATH).
const EnvServer = "CORRAL_NATS_SERVER"

// Binary returns the path of the nats-server binary, or an error saying how to install it.
func Binary() (string, error) {
	if p := os.Getenv(EnvServer); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("nats-server")
	if err != nil {
		return "", errors.New("natstest: nats-server not found on PATH: install it with " +
			"`apt-get install nats-server` (scripts/test.sh does), or set " + EnvServer + " to a nats-server binary")
	}
	return p, nil
}

// Node is one nats-server process. Its methods are not safe for concurrent use.
type Node struct {
	// URL is the node's client URL.
	URL string
	// Name is the node's server name.
	Name string

	args []string
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
	mu   sync.Mutex    // guards paused
	// paused is set by Pause, cleared by Continue and by the end of the process.
	paused bool
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
	ports := freePorts(tb, 2*n)
	c := &Cluster{}
	tb.Cleanup(c.kill)
	var routes []string
	for i := range n {
		routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(ports[n+i]))
	}
	prefix := Prefix(tb)
	for i := range n {
		dir := tb.TempDir()
		nd := &Node{
			URL:  "nats://127.0.0.1:" + strconv.Itoa(ports[i]),
			Name: fmt.Sprintf("%s-n%d", prefix, i),
			log:  filepath.Join(dir, "server.log"),
		}
		nd.args = []string{bin, "-js", "-sd", filepath.Join(dir, "store"), "-a", "127.0.0.1",
			"-p", strconv.Itoa(ports[i]), "-n", nd.Name, "-l", nd.log}
		if n > 1 {
			nd.args = append(nd.args, "--cluster_name", prefix, "--cluster", routes[i],
				"--routes", strings.Join(routes, ","))
		}
		c.Nodes = append(c.Nodes, nd)
	}
	for _, nd := range c.Nodes {
		if err := nd.start(); err != nil {
			tb.Fatal(err)
		}
	}
	c.WaitReady(tb)
	return c
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("natstest: free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func (nd *Node) start() error {
	cmd := exec.Command(nd.args[0], nd.args[1:]...)
	// The server dies with the test process, even if the test binary is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("natstest: start %s: %w", nd.args[0], err)
	}
	nd.cmd, nd.done = cmd, make(chan struct{})
	done := nd.done
	go func() { // owned by nd: waited for through done by kill and Kill
		_ = cmd.Wait()
		close(done)
	}()
	return nil
}

// URLs returns the client URLs of every node, comma-separated, as nats.Connect takes them.
func (c *Cluster) URLs() string {
	var us []string
	for _, nd := range c.Nodes {
		us = append(us, nd.URL)
	}
	return strings.Join(us, ",")
}

// WaitReady waits (up to a minute) until JetStream answers on every running, unpaused node; for
// a cluster, until the meta leader is elected.
func (c *Cluster) WaitReady(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, nd := range c.Nodes {
		if !nd.Running() || nd.Paused() {
			continue
		}
		for {
			err := nd.ping()
			if err == nil {
				break
			}
			select {
			case <-nd.done:
				tb.Fatalf("natstest: %s exited:\n%s", nd.Name, nd.LogTail(30))
			default:
			}
			if time.Now().After(deadline) {
				tb.Fatalf("natstest: %s not ready within a minute: %v\n%s", nd.Name, err, nd.LogTail(30))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// ping asks nd's JetStream for the account's info, which needs a meta leader in a cluster.
func (nd *Node) ping() error {
	nc, err := nats.Connect(nd.URL, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// Running reports whether nd's process is alive.
func (nd *Node) Running() bool {
	if nd.cmd == nil {
		return false
	}
	select {
	case <-nd.done:
		return false
	default:
		return true
	}
}

// Paused reports whether nd was stopped with Pause and not continued.
func (nd *Node) Paused() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.paused
}

// Kill sends SIGKILL to nd and waits for it to exit: a crash, the store left as it was.
func (nd *Node) Kill(tb testing.TB) {
	tb.Helper()
	if !nd.Running() {
		tb.Fatalf("natstest: Kill of %s, which is not running", nd.Name)
	}
	_ = nd.cmd.Process.Signal(syscall.SIGKILL)
	<-nd.done
	nd.mu.Lock()
	nd.paused = false
	nd.mu.Unlock()
}

// Restart starts a killed node again, on its port and its store, and waits until it is ready.
func (nd *Node) Restart(tb testing.TB, c *Cluster) {
	tb.Helper()
	if nd.Running() {
		tb.Fatalf("natstest: Restart of %s, which is running", nd.Name)
	}
	if err := nd.start(); err != nil {
		tb.Fatal(err)
	}
	c.WaitReady(tb)
}

// Pause sends SIGSTOP to nd: the process is alive and holds its connections, but answers
// nothing, as a server stalled by its machine would.
func (nd *Node) Pause(tb testing.TB) {
	tb.Helper()
	if err := nd.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		tb.Fatalf("natstest: pause %s: %v", nd.Name, err)
	}
	nd.mu.Lock()
	nd.paused = true
	nd.mu.Unlock()
}

// Continue sends SIGCONT to a paused nd.
func (nd *Node) Continue(tb testing.TB) {
	tb.Helper()
	if err := nd.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		tb.Fatalf("natstest: continue %s: %v", nd.Name, err)
	}
	nd.mu.Lock()
	nd.paused = false
	nd.mu.Unlock()
}

// LogTail returns the last n lines of nd's log.
func (nd *Node) LogTail(n int) string {
	b, err := os.ReadFile(nd.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// kill ends every node's process by its PID and waits for it (Cleanup).
func (c *Cluster) kill() {
	for _, nd := range c.Nodes {
		if nd.Running() {
			_ = nd.cmd.Process.Signal(syscall.SIGKILL) // also ends a stopped process
			<-nd.done
		}
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
