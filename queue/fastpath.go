package queue

import (
	"context"
	"time"
)

// A backend can do some things faster than the Backend interface lets it.
// It says so by implementing the unexported optional interfaces below, as an
// http.ResponseWriter may implement http.Flusher: [New] looks for each once,
// and the queue and its consumers use it where it is implemented and the
// Backend methods elsewhere. Unexported, they are open to the backends of
// this package only: [Memory] implements them.

// valueCarrier is a backend that keeps payload values in process: the queue
// passes them in [Message.Value] and runs no codec.
type valueCarrier interface {
	carriesValues()
}

// freshEnqueuer is a backend told which jobs have an ID the queue generated
// for them: no job can have that ID yet, so enqueueFresh, Enqueue for such a
// job, may skip looking for a duplicate.
type freshEnqueuer interface {
	enqueueFresh(ctx context.Context, msg Message) (EnqueueResult, error)
}

// quickConsumer is a backend in process, whose calls answer at once: a
// consumer observes only their errors for [Queue.Health]. receiveAt is
// Receive that also returns the time the backend read when it leased the
// job, so that the consumer need not read the clock again. ackNext is Ack
// followed, in one step, by a Receive that does not wait: it reports whether
// it took a ready job into d, held with no lease end until Extend gives it
// one (see Memory.ackNext); now is the caller's reading of the time, which
// may be old.
type quickConsumer interface {
	receiveAt(ctx context.Context, lease time.Duration, d *Delivery) (time.Time, error)
	ackNext(d *Delivery, now time.Time) (bool, error)
}

// fastPathOwner is a backend with fast paths of its own. A type that embeds
// a Memory has the Memory's unexported methods promoted, but may override
// the Backend methods they stand for (Enqueue, Receive, Ack): only a backend
// whose fastPathSelf is itself gets its freshEnqueuer and quickConsumer
// used; the calls of any other go through the Backend interface.
type fastPathOwner interface {
	fastPathSelf() Backend
}

// ownsFastPaths reports whether b is a fastPathOwner of its own.
func ownsFastPaths(b Backend) bool {
	o, ok := b.(fastPathOwner)
	return ok && o.fastPathSelf() == b
}

func (m *Memory) fastPathSelf() Backend { return m }

var (
	_ fastPathOwner = (*Memory)(nil)
	_ valueCarrier  = (*Memory)(nil)
	_ freshEnqueuer = (*Memory)(nil)
	_ quickConsumer = (*Memory)(nil)
)
