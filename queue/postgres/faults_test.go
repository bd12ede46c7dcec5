package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/postgres"
	"github.com/corral-go/corral/queue/postgres/internal/pgtest"
	"github.com/corral-go/corral/queue/queuetest"
)

// The backends' call timeout in the fault scenarios.
const faultCallTimeout = 2 * time.Second

// faultRecovery is the recovery bound the package doc states for one server killed and
// restarted, or paused and continued, with the fault scenarios' call timeout and the default
// poll interval: two call timeouts, plus 5s, plus the poll interval. The fault suite holds the
// backend to it (Faults.RecoveryBound, which TestFaults checks is this bound).
const faultRecovery = 2*faultCallTimeout + 5*time.Second + time.Second

// openFaultBackend is the fault suite's OpenFunc, in the test process and in its worker
// processes: a backend on a pool of its own on addr (a connection string), with room for every
// handler's query at once.
func openFaultBackend(addr, name string) (driver.Backend, func(), error) {
	cfg, err := pgxpool.ParseConfig(addr)
	if err != nil {
		return nil, nil, err
	}
	cfg.MaxConns = 10
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	b := postgres.New(pool, name, postgres.WithCallTimeout(faultCallTimeout))
	// The queue that opens b closes it too; closing it again here is harmless.
	return b, func() { _ = b.Close(context.Background()); pool.Close() }, nil
}

// pgBroker hands pgtest's server to the fault suite: one node, nothing to fail over to.
type pgBroker struct{ s *pgtest.Server }

func (pb pgBroker) Nodes() int                           { return 1 }
func (pb pgBroker) Addr() string                         { return pb.s.DSN() }
func (pb pgBroker) Kill(t testing.TB, node int)          { pb.s.Kill(t) }
func (pb pgBroker) Restart(t testing.TB, node int)       { pb.s.Restart(t) }
func (pb pgBroker) Pause(t testing.TB, node int)         { pb.s.Pause(t) }
func (pb pgBroker) Continue(t testing.TB, node int)      { pb.s.Continue(t) }
func (pb pgBroker) Leader(t testing.TB, name string) int { return -1 }

// TestFaults runs the fault suite against one postgres server: worker processes killed, a
// poison job that exits its process, the postmaster SIGKILLed (with its backends) and
// restarted on its data directory, the server paused, and shared settings; recovery from each
// within faultRecovery.
func TestFaults(t *testing.T) {
	f := queuetest.Faults{CallTimeout: faultCallTimeout}
	if got := f.RecoveryBound(); got != faultRecovery {
		t.Fatalf("the fault suite's recovery bound is %v, the package doc's %v: make them one", got, faultRecovery)
	}
	srv, _ := startDB(t)
	f.Broker, f.Open = pgBroker{srv}, openFaultBackend
	queuetest.RunFaults(t, f)
}
