package postgres

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/corral-go/corral/queue/driver"
)

// errCallTimeout is the cause of a query's context when the server did not answer within the
// call timeout (see WithCallTimeout).
var errCallTimeout = errors.New("postgres: no answer within the call timeout")

// fail returns the error of op, whose query failed with err, for a call made with ctx:
//   - the caller's ctx ended: its cause, and also queue.ErrUnavailable (the outcome of the
//     query is unknown);
//   - the server could not be reached, dropped the connection, is shutting down or starting,
//     or did not answer within the call timeout: an error matching queue.ErrUnavailable;
//   - else err, wrapped with op.
func fail(ctx context.Context, op string, err error) error {
	if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(cause, errCallTimeout) {
		return fmt.Errorf("postgres: %s: %w (%w)", op, cause, driver.ErrUnavailable)
	}
	if unreachable(err) || errors.Is(context.Cause(ctx), errCallTimeout) {
		return fmt.Errorf("postgres: %s: %w: %w", op, driver.ErrUnavailable, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// unreachable reports whether err says that the server could not be reached or did not
// answer: a timeout, a connection that failed or closed (driver.ErrBadConn, from a database/sql
// driver), or the server's own word that it is going away or not accepting connections yet.
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection exception
			return true
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // admin shutdown (pg_terminate_backend), crash shutdown, cannot connect now
			return true
		case pe.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errCallTimeout) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, sqldriver.ErrBadConn) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		errors.As(err, &ne) || errors.As(err, &ce)
}
