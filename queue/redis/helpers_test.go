package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/queuetest"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

func TestMain(m *testing.M) {
	goredis.SetLogger(quietDials{})
	queuetest.ServeWorker(openFaultBackend) // returns at once unless this is a worker process
	goleak.VerifyTestMain(exampleServerStopper{m})
}

// quietDials is go-redis's logger less its lines on failed dials, which a killed server
// makes by the hundred in the fault scenarios.
type quietDials struct{}

func (quietDials) Printf(ctx context.Context, format string, v ...any) {
	if s := fmt.Sprintf(format, v...); !strings.Contains(s, "failed to dial") {
		log.Print("redis: ", s)
	}
}

// exampleServerStopper stops the examples' server (see exampleAddr) once every test and
// example has run, before goleak looks for leaks.
type exampleServerStopper struct{ m *testing.M }

func (e exampleServerStopper) Run() int {
	code := e.m.Run()
	if exampleServer != nil {
		exampleServer.Stop()
	}
	return code
}

// newClient returns a client on addr, closed when the test ends.
func newClient(t testing.TB, addr string) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 100})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// openBackend opens a Backend, polling every 10ms, of a fresh queue with cfg on a throwaway
// server (appendfsync always); both end with the test.
func openBackend(t *testing.T, cfg driver.Config) *redis.Backend {
	t.Helper()
	srv := redistest.Start(t, "always")
	b := redis.New(newClient(t, srv.Addr()), queueName(t), redis.WithPollInterval(10*time.Millisecond))
	if err := b.Open(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return b
}

// queueName returns a fresh queue name.
func queueName(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "q" + hex.EncodeToString(b[:])
}

// The backends' call timeout in the fault scenarios.
const faultCallTimeout = 2 * time.Second

// The fault suite's address of a cluster (see clusterBroker.Addr): waitPrefix (the backends
// wait for one replica: WithReplicas(1, faultReplicaWait)), then the nodes' addresses
// separated by commas.
const (
	waitPrefix       = "wait:"
	faultReplicaWait = time.Second // within the call timeout, so that WAIT's answer arrives
)

// openFaultBackend is the fault suite's OpenFunc, in the test process and in its workers: a
// Client on one server's address, a ClusterClient on a list of them. Neither retries a
// command on its own (a retried script could run twice).
func openFaultBackend(addr, name string) (driver.Backend, func(), error) {
	opts := []redis.Option{redis.WithCallTimeout(faultCallTimeout)}
	if a, ok := strings.CutPrefix(addr, waitPrefix); ok {
		addr = a
		opts = append(opts, redis.WithReplicas(1, faultReplicaWait))
	}
	var c goredis.UniversalClient
	if strings.Contains(addr, ",") {
		c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(addr, ","), PoolSize: 20,
			MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: faultCallTimeout, WriteTimeout: faultCallTimeout})
	} else {
		c = goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 20, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: faultCallTimeout, WriteTimeout: faultCallTimeout})
	}
	b := redis.New(c, name, opts...)
	return b, func() { _ = b.Close(context.Background()); _ = c.Close() }, nil
}

// broker hands a redistest server to the fault suite: one node, nothing to fail over to.
type broker struct{ s *redistest.Server }

func (rb broker) Nodes() int                           { return 1 }
func (rb broker) Addr() string                         { return rb.s.Addr() }
func (rb broker) Kill(t testing.TB, node int)          { rb.s.Kill(t) }
func (rb broker) Restart(t testing.TB, node int)       { rb.s.Restart(t) }
func (rb broker) Pause(t testing.TB, node int)         { rb.s.Pause(t) }
func (rb broker) Continue(t testing.TB, node int)      { rb.s.Continue(t) }
func (rb broker) Leader(t testing.TB, name string) int { return -1 }

// clusterBroker hands a replicated redistest cluster to the fault suite: every node, the
// queue's leader the master serving its slot, and backends that wait for one replica.
type clusterBroker struct{ c *redistest.Cluster }

func (cb clusterBroker) Nodes() int                      { return len(cb.c.Nodes()) }
func (cb clusterBroker) Addr() string                    { return waitPrefix + strings.Join(cb.c.Addrs(), ",") }
func (cb clusterBroker) Kill(t testing.TB, node int)     { cb.c.Nodes()[node].Kill(t) }
func (cb clusterBroker) Restart(t testing.TB, node int)  { cb.c.Nodes()[node].Restart(t) }
func (cb clusterBroker) Pause(t testing.TB, node int)    { cb.c.Nodes()[node].Pause(t) }
func (cb clusterBroker) Continue(t testing.TB, node int) { cb.c.Nodes()[node].Continue(t) }
func (cb clusterBroker) Leader(t testing.TB, name string) int {
	return cb.c.MasterOf(t, "corral:{"+name+"}:")
}
