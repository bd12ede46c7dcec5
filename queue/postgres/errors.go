package postgres

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/corral-go/corral/queue/driver"
)

// calls bounds and classifies the backend's queries by driver.Call's rule; the backend's
// own part is which errors say the server could not be reached (unreachable).
var calls = driver.Call{Name: "postgres", Unreachable: unreachable}

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
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, sqldriver.ErrBadConn) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		errors.As(err, &ne) || errors.As(err, &ce)
}
