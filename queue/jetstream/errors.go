package jetstream

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
)

// calls bounds and classifies the backend's requests by driver.Call's rule; the backend's
// own part is which errors say the broker could not be reached (unreachable).
var calls = driver.Call{Name: "jetstream", Unreachable: unreachable}

// req returns the context of one request (or a short series of them) of a
// call made with ctx: it ends with ctx, or after the call timeout, so that
// no request waits for ever for a reply that died with a server.
func (b *Backend) req(ctx context.Context) (context.Context, context.CancelFunc) {
	return calls.Context(ctx, b.o.callTimeout)
}

// fail is calls.Fail, noting the time of an error matching queue.ErrUnavailable
// (see staleRun).
func (b *Backend) fail(ctx context.Context, op string, err error) error {
	err = calls.Fail(ctx, op, err)
	if errors.Is(err, driver.ErrUnavailable) {
		b.restless()
	}
	return err
}

// purgeSubject removes the messages of subject from s. Its error is the backend's (see
// fail), for the operation op on the job id (none if id is "").
func (b *Backend) purgeSubject(ctx context.Context, s natsjs.Stream, subject, op, id string) error {
	err := s.Purge(ctx, natsjs.WithPurgeSubject(subject))
	if err == nil {
		return nil
	}
	if id != "" {
		op += " " + id
	}
	return b.fail(ctx, op, err)
}

// restless notes that the broker has just stalled, failed to answer or changed leaders.
func (b *Backend) restless() {
	now := time.Now().UnixNano()
	b.unrest.Store(now)
	b.shaken.Store(now)
}

// noteLeader notes the consumer's leader in ci: a change is unrest (see staleRun).
func (b *Backend) noteLeader(ci *natsjs.ConsumerInfo) {
	if ci == nil || ci.Cluster == nil {
		return
	}
	b.mu.Lock()
	changed := b.leaderSeen != "" && b.leaderSeen != ci.Cluster.Leader // the first is not a change
	b.leaderSeen = ci.Cluster.Leader
	b.mu.Unlock()
	if changed {
		b.restless()
	}
}

// unreachable reports whether err says the broker could not be reached or
// did not answer: a timeout, no connection, no server answering for the
// stream, or a cluster without a leader.
func unreachable(err error) bool {
	for _, target := range []error{
		context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders,
		nats.ErrConnectionClosed, nats.ErrConnectionDraining, nats.ErrDisconnected,
		nats.ErrConnectionReconnecting, nats.ErrStaleConnection, natsjs.ErrNoStreamResponse,
		natsjs.ErrNoHeartbeat, natsjs.ErrServerShutdown,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var e *natsjs.APIError
	if errors.As(err, &e) {
		// 503 is "no responders" and "JetStream system temporarily
		// unavailable" (10008), as during a leader election. 10158 (newer
		// servers) is "duplicate message id is in process": an earlier try of
		// the same publish is still being stored, its outcome unknown yet.
		return e.Code == 503 || e.ErrorCode == codeClusterUnavailable || e.ErrorCode == codeDupInProcess
	}
	return false
}

const (
	codeClusterUnavailable natsjs.ErrorCode = 10008 // JetStream system temporarily unavailable
	codeDupInProcess       natsjs.ErrorCode = 10158 // duplicate message id is in process
)

// apiCode returns the JetStream API error code of err, 0 if it has none.
func apiCode(err error) natsjs.ErrorCode {
	var e *natsjs.APIError
	if errors.As(err, &e) {
		return e.ErrorCode
	}
	return 0
}

// Error codes of the JetStream API that the backend branches on.
const (
	codeFull      natsjs.ErrorCode = 10077 // maximum messages exceeded
	codeWrongLast natsjs.ErrorCode = 10071 // wrong last sequence
	codeWrongLR   natsjs.ErrorCode = 10164 // wrong last sequence, replicated
	codeNoMessage natsjs.ErrorCode = 10037 // no message found
)
