package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters on loopback, each a Server, the 16384 slots split
// between them.
type Cluster struct {
	Masters []*Server
}

// StartCluster starts n masters with cluster-enabled yes, gives each a share of the slots,
// introduces them (CLUSTER MEET) and returns once every node reports cluster_state:ok. The
// servers are stopped when tb ends.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c := &Cluster{}
	for range n {
		s, err := Launch("always", "--cluster-enabled", "yes", "--cluster-node-timeout", "2000")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(s.Stop)
		c.Masters = append(c.Masters, s)
	}
	ctx := context.Background()
	per := 16384 / n
	for i, s := range c.Masters {
		cl := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
		hi := (i+1)*per - 1
		if i == n-1 {
			hi = 16383
		}
		if err := cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", i*per, hi).Err(); err != nil {
			tb.Fatal(err)
		}
		if i > 0 {
			if err := cl.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", c.Masters[0].Port).Err(); err != nil {
				tb.Fatal(err)
			}
		}
		_ = cl.Close()
	}
	for _, s := range c.Masters {
		cl := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
		for deadline := time.Now().Add(time.Minute); ; {
			info, err := cl.Do(ctx, "CLUSTER", "INFO").Text()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)) {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("redistest: cluster not ok within a minute: %v\n%s", err, info)
			}
			time.Sleep(20 * time.Millisecond) // a polling pace: the cluster gives no other sign
		}
		_ = cl.Close()
	}
	return c
}

// Addrs returns the masters' addresses.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, s := range c.Masters {
		a = append(a, s.Addr())
	}
	return a
}
