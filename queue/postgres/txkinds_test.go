package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/postgres"
)

// A txKind is a kind of transaction that EnqueueTx and AckTx run in: the tests of the
// transactional calls run once with each.
type txKind struct {
	name  string
	begin func(ctx context.Context) (testTx, error)
}

// testTx is a transaction that a test enqueues or acks in, then commits or rolls back.
type testTx interface {
	postgres.Tx
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// txKinds returns the kinds of transaction on pool's database: pgx's own (pgx.Tx);
// database/sql's over pgx's driver, with connections of its own, wrapped by SQLTx; and the same
// with database/sql's default argument conversion in front of the driver (plainConnector), as
// for a driver that knows nothing of pgx's types. The databases close when the test ends.
func txKinds(t *testing.T, pool *pgxpool.Pool) []txKind {
	t.Helper()
	cfg := *pool.Config().ConnConfig
	stdDB := sql.OpenDB(stdlib.GetConnector(cfg))
	plainDB := sql.OpenDB(plainConnector{stdlib.GetConnector(cfg)})
	t.Cleanup(func() {
		_ = stdDB.Close()
		_ = plainDB.Close()
	})
	return []txKind{
		{"pgx", func(ctx context.Context) (testTx, error) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return nil, err
			}
			return tx, nil
		}},
		{"sql", sqlBegin(stdDB)},
		{"sql-plain", sqlBegin(plainDB)},
	}
}

// sqlBegin returns the begin of a txKind of db.
func sqlBegin(db *sql.DB) func(ctx context.Context) (testTx, error) {
	return func(ctx context.Context) (testTx, error) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		return sqlTestTx{postgres.SQLTx(tx), tx}, nil
	}
}

// sqlTestTx is a database/sql transaction as a testTx.
type sqlTestTx struct {
	postgres.Tx
	tx *sql.Tx
}

func (s sqlTestTx) Commit(context.Context) error   { return s.tx.Commit() }
func (s sqlTestTx) Rollback(context.Context) error { return s.tx.Rollback() }

// plainConnector makes connections of pgx's driver without their CheckNamedValue, so that
// database/sql converts every argument with driver.DefaultParameterConverter (and refuses what
// is not a driver.Value, such as a []string) before the driver sees it.
type plainConnector struct{ driver.Connector }

func (c plainConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return plainConn{conn.(*stdlib.Conn)}, nil
}

// plainConn is a connection of pgx's driver with only the methods of database/sql's driver
// interfaces that do not convert arguments.
type plainConn struct{ c *stdlib.Conn }

func (p plainConn) Prepare(query string) (driver.Stmt, error) { return p.c.Prepare(query) }
func (p plainConn) Close() error                              { return p.c.Close() }
func (p plainConn) Begin() (driver.Tx, error) {
	return p.c.BeginTx(context.Background(), driver.TxOptions{})
}
func (p plainConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	return p.c.BeginTx(ctx, o)
}
func (p plainConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return p.c.ExecContext(ctx, q, args)
}
func (p plainConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return p.c.QueryContext(ctx, q, args)
}
func (p plainConn) ResetSession(ctx context.Context) error { return p.c.ResetSession(ctx) }

// TestPlainConnectorConverts: plainConnector refuses an argument that is not a driver.Value,
// which pgx's driver as it comes takes: the sql-plain kind tests what it says.
func TestPlainConnectorConverts(t *testing.T) {
	pool := db(t)
	ctx := context.Background()
	cfg := *pool.Config().ConnConfig
	plainDB := sql.OpenDB(plainConnector{stdlib.GetConnector(cfg)})
	defer plainDB.Close()
	stdDB := sql.OpenDB(stdlib.GetConnector(cfg))
	defer stdDB.Close()
	var n int64
	arr := []string{"a", "b"}
	if err := stdDB.QueryRowContext(ctx, `SELECT cardinality($1::text[])`, arr).Scan(&n); err != nil || n != 2 {
		t.Fatalf("pgx's driver with a []string: %d, %v; want 2, nil", n, err)
	}
	if err := plainDB.QueryRowContext(ctx, `SELECT cardinality($1::text[])`, arr).Scan(&n); err == nil {
		t.Fatal("plainConnector took a []string: it does not convert as database/sql's default")
	}
	if err := plainDB.QueryRowContext(ctx, `SELECT length($1::text)::bigint`, "abc").Scan(&n); err != nil || n != 3 {
		t.Fatalf("plainConnector with a string: %d, %v; want 3, nil", n, err)
	}
}

// TestTxUnavailable: when the server drops the connection of the caller's transaction,
// EnqueueTx fails with an error matching queue.ErrUnavailable with every kind of transaction:
// the call that meets the drop, and the calls after it (pgx's database/sql driver reports a
// connection known to be gone as driver.ErrBadConn).
func TestTxUnavailable(t *testing.T) {
	pool := db(t)
	for _, kind := range txKinds(t, pool) {
		t.Run(kind.name, func(t *testing.T) {
			ctx := context.Background()
			q, b := openQueue(t, pool, nil)
			tx, err := kind.begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			var pid int64
			if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()::bigint`).Scan(&pid); err != nil {
				t.Fatal(err)
			}
			var ok bool
			if err := pool.QueryRow(ctx, `SELECT pg_terminate_backend($1::int, 5000)`, pid).Scan(&ok); err != nil || !ok {
				t.Fatalf("pg_terminate_backend: %v, %v", ok, err)
			}
			for i := range 2 {
				if _, err := postgres.EnqueueTx(ctx, tx, b, q, "x"); !errors.Is(err, queue.ErrUnavailable) {
					t.Errorf("EnqueueTx %d on a dropped connection: %v, want ErrUnavailable", i+1, err)
				}
			}
		})
	}
}
