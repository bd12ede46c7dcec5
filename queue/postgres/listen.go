package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/corral-go/corral/backoff"
)

// The listener: one goroutine per opened Backend, on a connection of its own made from the
// pool's configuration, LISTENs on the schema's channel. Every statement that stores a job or
// makes one ready notifies the channel with the queue's name, in its transaction (so a job
// enqueued in a transaction wakes receivers at its commit, not before). A notification for
// this queue wakes one waiting receiver.
//
// No wake-up is lost when the connection drops: each time the listener (re)connects it wakes
// every receiver, which look at the table again, and while it is disconnected the receivers
// poll at the poll interval. A connection that stops answering (a paused server) is found by
// a ping every listenPing.

// listenPing is how long the listener waits for a notification before it pings the server.
const listenPing = 5 * time.Second

// listenBackoff spaces the listener's attempts to reconnect.
var listenBackoff = backoff.Exponential(20*time.Millisecond, 2, time.Second, backoff.WithJitter(backoff.EqualJitter))

// listen runs the listener until ctx ends.
func (b *Backend) listen(ctx context.Context) {
	defer close(b.listenDone)
	delays := listenBackoff.Sequence()
	first := true
	lastPrune := time.Time{}
	for ctx.Err() == nil {
		conn, err := b.listenConn(ctx)
		if err != nil {
			if !calls.Sleep(ctx, delays.Next()) {
				return
			}
			continue
		}
		delays.Reset()
		if !first {
			b.reconnects.Add(1)
		}
		first = false
		b.listening.Store(true)
		b.wake.all() // whatever was notified while no one listened
		b.serveListen(ctx, conn, &lastPrune)
		b.listening.Store(false)
		cctx, cancel := context.WithTimeout(context.Background(), b.o.callTimeout)
		_ = conn.Close(cctx)
		cancel()
		b.wake.all()
	}
}

// listenConn connects and LISTENs.
func (b *Backend) listenConn(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, b.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+quoteIdent(b.channel)); err != nil {
		_ = conn.Close(cctx)
		return nil, err
	}
	return conn, nil
}

// serveListen waits for notifications on conn until it fails or ctx ends; between
// notifications it pings the server, and forgets the IDs past the dedup horizon.
func (b *Backend) serveListen(ctx context.Context, conn *pgx.Conn, lastPrune *time.Time) {
	for ctx.Err() == nil {
		if time.Since(*lastPrune) >= pruneEvery {
			b.prune(ctx)
			*lastPrune = time.Now()
		}
		wctx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if n.Payload == b.name {
				b.wake.one()
			}
			continue
		case ctx.Err() != nil:
			return
		case wctx.Err() == nil:
			return // the connection failed
		}
		// No notification for a while: is the server still there?
		cctx, cancel := b.call(ctx)
		err = conn.Ping(cctx)
		cancel()
		if err != nil {
			return
		}
	}
}

// pruneEvery is how often the listener forgets IDs past the dedup horizon, and unique keys
// past their period.
const pruneEvery = time.Minute

// prune forgets IDs past the dedup horizon, then the unique keys past their period, a batch
// at a time, for a call timeout at most each.
func (b *Backend) prune(ctx context.Context) {
	if b.cfg.DedupHorizon > 0 {
		b.pruneBatches(ctx, b.sql.prune, b.name, micros(b.cfg.DedupHorizon))
	}
	b.pruneBatches(ctx, b.sql.pruneUniques, b.name)
}

// pruneBatches runs stmt with args until it deletes nothing, for a call timeout at most.
func (b *Backend) pruneBatches(ctx context.Context, stmt string, args ...any) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	for cctx.Err() == nil {
		tag, err := b.pool.Exec(cctx, stmt, args...)
		if err != nil || tag.RowsAffected() == 0 {
			return
		}
	}
}
