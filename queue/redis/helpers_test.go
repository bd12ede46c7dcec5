package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/queuetest"
	"github.com/corral-go/corral/queue/redis"
	"github.com/corral-go/corral/queue/redis/internal/redistest"
)

func TestMain(m *testing.M) {
	queuetest.ServeWorker(openFaultBackend) // returns at once unless this is a worker process
	goleak.VerifyTestMain(exampleServerStopper{m})
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

// openFaultBackend is the fault suite's OpenFunc, in the test process and in its workers.
func openFaultBackend(addr, name string) (queue.Backend, func(), error) {
	c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 20, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: faultCallTimeout, WriteTimeout: faultCallTimeout})
	b := redis.New(c, name, redis.WithCallTimeout(faultCallTimeout))
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
