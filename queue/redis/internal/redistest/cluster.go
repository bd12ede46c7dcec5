package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// NodeTimeout is the cluster-node-timeout of StartCluster's clusters, and the one a test
// passes StartReplicatedCluster for quick failovers: a master that answers no other node for
// this long is failed over to a replica (after an election that takes a second or so more).
const NodeTimeout = 2 * time.Second

// Cluster is a Redis Cluster on loopback, each node a Server. Masters are the nodes started
// as masters, the 16384 slots split between them; Replicas[j*len(Masters)+i], if any, started
// as replica j of Masters[i]. A failover swaps the roles: ask the cluster (MasterOf) which
// node serves a slot now.
type Cluster struct {
	Masters  []*Server
	Replicas []*Server
	// NodeTimeout is the nodes' cluster-node-timeout.
	NodeTimeout time.Duration
}

// StartCluster starts n masters with cluster-enabled yes, gives each a share of the slots,
// introduces them (CLUSTER MEET) and returns once every node reports cluster_state:ok. The
// servers are stopped when tb ends.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	return startCluster(tb, n, 0, NodeTimeout)
}

// StartReplicatedCluster is StartCluster with r replicas for each master (CLUSTER REPLICATE)
// and cluster-node-timeout nodeTimeout: n*(1+r) nodes. It returns once every node reports
// cluster_state:ok and every replica has confirmed a write of its master, so that a master
// SIGKILLed (or paused) from then on is failed over to its replica 0 by the cluster itself, a
// little over nodeTimeout later (an election); its other replicas then follow the new master.
// Only replica 0 of each master stands for election: the others are started with
// cluster-replica-no-failover, since two candidates with the same replication offset can split
// the surviving masters' votes round after round (CI saw two minutes of failed elections with
// two replicas standing). A master restarted after its replica took over stands too.
func StartReplicatedCluster(tb testing.TB, n, r int, nodeTimeout time.Duration) *Cluster {
	tb.Helper()
	return startCluster(tb, n, r, nodeTimeout)
}

func startCluster(tb testing.TB, n, replicas int, nodeTimeout time.Duration) *Cluster {
	tb.Helper()
	c := &Cluster{NodeTimeout: nodeTimeout}
	launch := func(standsForElection bool) *Server {
		// A replica whose election failed (its request reaching a master that had not yet
		// marked the old one failed) would give up after 30s without
		// cluster-replica-validity-factor 0.
		noFailover := "yes"
		if standsForElection {
			noFailover = "no"
		}
		s, err := Launch("always", "--cluster-enabled", "yes",
			"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
			"--cluster-replica-validity-factor", "0", "--cluster-replica-no-failover", noFailover)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(s.Stop)
		return s
	}
	for range n {
		c.Masters = append(c.Masters, launch(true))
	}
	for i := range n * replicas {
		c.Replicas = append(c.Replicas, launch(i < n))
	}
	if err := c.join(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if err := c.waitReady(); err != nil {
		tb.Fatalf("redistest: cluster not ready within a minute: %v", err)
	}
	return c
}

// join gives each master its share of the slots and every node a config epoch of its own,
// introduces every node to the first (CLUSTER MEET) and makes each replica follow its master
// (CLUSTER REPLICATE).
//
// The epochs are set before the nodes meet, as redis-cli --cluster create does: nodes that
// meet with the same epoch (0; a replica starts as a master) settle their collision by
// bumping one, and a replica that has not heard of its master's new epoch when the master
// dies asks for votes with the old one, which every master refuses ("slot epoch > reqEpoch")
// for as long as it stands: CI saw a master killed three seconds after the cluster was ready
// never replaced.
func (c *Cluster) join(ctx context.Context) error {
	n := len(c.Masters)
	per := 16384 / n
	for i, s := range c.Masters {
		hi := (i+1)*per - 1
		if i == n-1 {
			hi = 16383
		}
		if err := do(ctx, s, "CLUSTER", "ADDSLOTSRANGE", i*per, hi).Err(); err != nil {
			return err
		}
	}
	all := c.Nodes()
	for i, s := range all {
		if err := do(ctx, s, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return err
		}
	}
	for _, s := range all[1:] {
		if err := do(ctx, s, "CLUSTER", "MEET", "127.0.0.1", all[0].Port).Err(); err != nil {
			return err
		}
	}
	for i, r := range c.Replicas {
		id, err := do(ctx, c.Masters[i%n], "CLUSTER", "MYID").Text()
		if err != nil {
			return err
		}
		// The replica must know its master before it can follow it: retry until gossip told it.
		if err := until(func() error { return do(ctx, r, "CLUSTER", "REPLICATE", id).Err() }); err != nil {
			return fmt.Errorf("redistest: CLUSTER REPLICATE on %s: %w", r.Addr(), err)
		}
	}
	return nil
}

// waitReady waits until every node reports cluster_state:ok, knows every other and every
// master's config epoch, and every replica's link to its master is up and carries writes.
func (c *Cluster) waitReady() error {
	ctx := context.Background()
	all := c.Nodes()
	known := "cluster_known_nodes:" + strconv.Itoa(len(all)) + "\r"
	epochs := map[string]string{} // a master's ID: the config epoch join gave it
	for i, m := range c.Masters {
		id, err := do(ctx, m, "CLUSTER", "MYID").Text()
		if err != nil {
			return err
		}
		epochs[id] = strconv.Itoa(i + 1)
	}
	// Every node must know each master's epoch: a replica asks for votes with its master's.
	err := eachUntil(all, func(s *Server) error {
		info, err := do(ctx, s, "CLUSTER", "INFO").Text()
		if err == nil && (!strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, known)) {
			err = errors.New("not ok yet:\n" + info)
		}
		if err == nil {
			err = knowsEpochs(ctx, s, epochs)
		}
		return err
	})
	if err != nil {
		return err
	}
	err = eachUntil(c.Replicas, func(r *Server) error {
		info, err := do(ctx, r, "INFO", "replication").Text()
		if err == nil && !strings.Contains(info, "master_link_status:up") {
			err = errors.New("replica not in sync:\n" + info)
		}
		return err
	})
	if err != nil || len(c.Replicas) == 0 {
		return err
	}
	// A replica whose link is up gets its master's writes only once it has acknowledged the
	// copy it loaded (its first REPLCONF ACK, up to a second later): a master killed before
	// then leaves a replica that has nothing of what it acknowledged, which a test of async
	// replication cannot tell from a lag. A write that every replica confirms (WAIT) ends
	// that window; FLUSHALL, on a cluster that holds nothing yet, writes without a key.
	r := len(c.Replicas) / len(c.Masters)
	return eachUntil(c.Masters, func(m *Server) error {
		if err := do(ctx, m, "FLUSHALL").Err(); err != nil {
			return err
		}
		if n, err := do(ctx, m, "WAIT", r, 4000).Int(); err != nil || n != r {
			return fmt.Errorf("redistest: WAIT %d on %s: %d, %v", r, m.Addr(), n, err)
		}
		return nil
	})
}

// eachUntil calls until(f(s)) for each s of servers in turn, and returns the first error.
func eachUntil(servers []*Server, f func(s *Server) error) error {
	for _, s := range servers {
		if err := until(func() error { return f(s) }); err != nil {
			return err
		}
	}
	return nil
}

// knowsEpochs returns an error unless s's CLUSTER NODES gives every master in epochs its
// config epoch there (the seventh field of a node's line).
func knowsEpochs(ctx context.Context, s *Server, epochs map[string]string) error {
	nodes, err := do(ctx, s, "CLUSTER", "NODES").Text()
	if err != nil {
		return err
	}
	seen := 0
	for line := range strings.Lines(nodes) {
		f := strings.Fields(line)
		if len(f) < 7 || epochs[f[0]] == "" {
			continue
		}
		if f[6] != epochs[f[0]] {
			return fmt.Errorf("%s sees master %s at config epoch %s, not %s yet:\n%s", s.Addr(), f[0], f[6], epochs[f[0]], nodes)
		}
		seen++
	}
	if seen != len(epochs) {
		return fmt.Errorf("%s knows %d of the %d masters:\n%s", s.Addr(), seen, len(epochs), nodes)
	}
	return nil
}

// do runs one command on s on a connection of its own.
func do(ctx context.Context, s *Server, args ...any) *goredis.Cmd {
	cl := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 5 * time.Second})
	defer cl.Close()
	cmd := cl.Do(ctx, args...)
	_, _ = cmd.Result()
	return cmd
}

// until calls f until it returns nil, a minute at most, and returns its last error.
func until(f func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // a polling pace: the cluster gives no other sign
	}
}

// Nodes returns every node: the masters as started, then the replicas.
func (c *Cluster) Nodes() []*Server {
	return append(append([]*Server(nil), c.Masters...), c.Replicas...)
}

// Addrs returns the addresses of every node (Nodes).
func (c *Cluster) Addrs() []string {
	var a []string
	for _, s := range c.Nodes() {
		a = append(a, s.Addr())
	}
	return a
}

// MasterOf returns the index in Nodes of the master that the cluster says serves key's slot
// now, asking the first node that answers. A master that was killed is still named until the
// cluster has failed it over.
func (c *Cluster) MasterOf(tb testing.TB, key string) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var last error
	for _, s := range c.Nodes() {
		port, err := masterPort(ctx, s, key)
		if err != nil {
			last = err
			continue
		}
		for i, n := range c.Nodes() {
			if n.Port == port {
				return i
			}
		}
		tb.Fatalf("redistest: the master of %q has port %d, none of the cluster's", key, port)
	}
	tb.Fatalf("redistest: no node says which master serves %q: %v", key, last)
	return -1
}

// masterPort asks s for the port of the master serving key's slot (CLUSTER SHARDS).
func masterPort(ctx context.Context, s *Server, key string) (int, error) {
	slot, err := do(ctx, s, "CLUSTER", "KEYSLOT", key).Int64()
	if err != nil {
		return 0, err
	}
	v, err := do(ctx, s, "CLUSTER", "SLOTS").Slice()
	if err != nil {
		return 0, err
	}
	for _, r := range v {
		row, _ := r.([]any)
		if len(row) < 3 {
			continue
		}
		lo, _ := row[0].(int64)
		hi, _ := row[1].(int64)
		m, _ := row[2].([]any)
		if slot < lo || slot > hi || len(m) < 2 {
			continue
		}
		p, _ := m[1].(int64)
		return int(p), nil
	}
	return 0, fmt.Errorf("redistest: %s serves no master for slot %d", s.Addr(), slot)
}

// Describe returns CLUSTER NODES as the first node that answers sees it, and the last lines
// of every node's log, for a test's diagnosis.
func (c *Cluster) Describe() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var b strings.Builder
	for _, s := range c.Nodes() {
		if v, err := do(ctx, s, "CLUSTER", "NODES").Text(); err == nil {
			b.WriteString(v)
			break
		}
	}
	for i, s := range c.Nodes() {
		fmt.Fprintf(&b, "node %d (%s) log:\n%s\n", i, s.Addr(), s.LogTail(15))
	}
	return b.String()
}
