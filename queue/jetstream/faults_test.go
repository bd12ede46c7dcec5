package jetstream_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
	"github.com/corral-go/corral/queue/queuetest"
)

// The backends' call timeout and prefetch in the fault scenarios. The prefetch is larger than
// the workers (4 per process), so that a count of attempts by deliveries would show.
const (
	faultCallTimeout = 2 * time.Second
	faultPrefetch    = 16
)

// openFaultBackend is the fault suite's OpenFunc, in the test process and in its worker
// processes: a backend on its own connection to every server of addr, with three replicas on a
// cluster. The connection pings every second, so that a paused server is left for another
// within a few seconds, and reconnects for ever.
func openFaultBackend(addr, name string) (driver.Backend, func(), error) {
	nc, err := nats.Connect(addr, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.PingInterval(time.Second), nats.MaxPingsOutstanding(2), nats.Timeout(2*time.Second))
	if err != nil {
		return nil, nil, err
	}
	js, err := natsjs.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	replicas := min(strings.Count(addr, ",")+1, 3)
	b := jetstream.New(js, name, jetstream.WithReplicas(replicas), jetstream.WithCallTimeout(faultCallTimeout),
		jetstream.WithPrefetch(faultPrefetch))
	// The queue that opens b closes it too; closing it again here is harmless.
	return b, func() { _ = b.Close(context.Background()); nc.Close() }, nil
}

// natsBroker hands natstest's server processes to the fault suite.
type natsBroker struct{ c *natstest.Cluster }

func (nb natsBroker) Nodes() int                           { return len(nb.c.Nodes) }
func (nb natsBroker) Addr() string                         { return nb.c.URLs() }
func (nb natsBroker) Kill(t testing.TB, node int)          { nb.c.Nodes[node].Kill(t) }
func (nb natsBroker) Restart(t testing.TB, node int)       { nb.c.Nodes[node].Restart(t, nb.c) }
func (nb natsBroker) Pause(t testing.TB, node int)         { nb.c.Nodes[node].Pause(t) }
func (nb natsBroker) Continue(t testing.TB, node int)      { nb.c.Nodes[node].Continue(t) }
func (nb natsBroker) Leader(t testing.TB, name string) int { return nb.leader(t, name) }

// Describe implements queuetest.Describer: the work stream's state, its consumer's, and the
// first stored jobs, as the servers answer within a few seconds; then, in a cluster, each
// node's own copy of the work stream and its consumer (the API answers from the leaders), and
// the last lines of each node's log.
func (nb natsBroker) Describe(name string) string {
	nc, err := nats.Connect(nb.c.URLs(), nats.Timeout(2*time.Second))
	if err != nil {
		return err.Error()
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		return err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	s, err := js.Stream(ctx, "CORRAL_"+name)
	if err != nil {
		return "stream: " + err.Error()
	}
	si := s.CachedInfo()
	fmt.Fprintf(&b, "work stream msgs %d seq %d-%d deleted %d cluster %+v", si.State.Msgs,
		si.State.FirstSeq, si.State.LastSeq, si.State.NumDeleted, si.Cluster)
	c, err := s.Consumer(ctx, "corral")
	if err != nil {
		fmt.Fprintf(&b, "\nconsumer: %v", err)
	} else {
		ci := c.CachedInfo()
		fmt.Fprintf(&b, "\nconsumer delivered %+v ack floor %+v ack pending %d redelivered %d waiting %d pending %d cluster %+v",
			ci.Delivered, ci.AckFloor, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting, ci.NumPending, ci.Cluster)
	}
	for seq, n := si.State.FirstSeq, 0; seq <= si.State.LastSeq && n < 20; n++ {
		m, err := s.GetMsg(ctx, seq, natsjs.WithGetMsgSubject(">"))
		if err != nil {
			fmt.Fprintf(&b, "\nmsg from %d: %v", seq, err)
			break
		}
		fmt.Fprintf(&b, "\nstored %d %s %s", m.Sequence, m.Header.Get("Corral-Id"), m.Time.Format(time.RFC3339Nano))
		seq = m.Sequence + 1
	}
	if len(nb.c.Nodes) > 1 {
		b.WriteString("\nreplicas:" + nb.c.Replicas("CORRAL_"+name))
		for _, nd := range nb.c.Nodes {
			fmt.Fprintf(&b, "\nlog of %s, last lines:\n%s", nd.Name, nd.LogTail(12))
		}
	}
	return b.String()
}

// leader returns the node leading the queue's work stream (-1 on a single server).
func (nb natsBroker) leader(t testing.TB, name string) int {
	if len(nb.c.Nodes) == 1 {
		return -1
	}
	nc := nb.c.Connect(t)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "CORRAL_"+name)
	if err != nil {
		t.Fatalf("stream of %s: %v", name, err)
	}
	if ci := s.CachedInfo().Cluster; ci != nil {
		for i, nd := range nb.c.Nodes {
			if nd.Name == ci.Leader {
				return i
			}
		}
		t.Fatalf("stream leader %q is none of the nodes", ci.Leader)
	}
	t.Fatal("stream info without cluster info")
	return -1
}

// TestFaultsOneNode runs the fault suite against one nats-server process.
func TestFaultsOneNode(t *testing.T) {
	queuetest.RunFaults(t, queuetest.Faults{
		Broker: natsBroker{natstest.Start(t)}, Open: openFaultBackend, CallTimeout: faultCallTimeout,
		Prefetch: faultPrefetch,
	})
}

// TestFaultsCluster runs the fault suite against a cluster of three nats-server processes on
// loopback, the queue's streams replicated on all three. The election bound is 15s: when a
// paused leader continues, each of the queue's four streams may elect again, and nats-server 2.9
// took 19-20s from the continue to the next ack in 2 of 20 runs (the median 0.13s).
func TestFaultsCluster(t *testing.T) {
	queuetest.RunFaults(t, queuetest.Faults{
		Broker: natsBroker{natstest.StartCluster(t, 3)}, Open: openFaultBackend, CallTimeout: faultCallTimeout,
		Election: 15 * time.Second, Prefetch: faultPrefetch,
	})
}
