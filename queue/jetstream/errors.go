package jetstream

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/backoff"
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

// restless notes that the broker has just stalled, failed to answer or changed leaders.
func (b *Backend) restless() { b.unrest.Store(time.Now().UnixNano()) }

// noteLeader notes the consumer's leader in ci: a change is unrest (see staleRun).
func (b *Backend) noteLeader(ci *natsjs.ConsumerInfo) {
	if ci == nil || ci.Cluster == nil {
		return
	}
	b.mu.Lock()
	changed := b.leaderSeen != ci.Cluster.Leader
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

// Codes a cluster answers when another process creates the same stream or consumer at the
// same moment: the next try finds the other's and updates it to the same settings.
const (
	codeStreamNameInUse   natsjs.ErrorCode = 10058 // stream name already in use
	codeSubjectsOverlap   natsjs.ErrorCode = 10065 // subjects overlap with an existing stream
	codeConsumerExists    natsjs.ErrorCode = 10148 // consumer already exists
	codeConsumerNameInUse natsjs.ErrorCode = 10013 // consumer name already in use
)

// codeNoPlacement is a cluster's answer to a creation while it has not yet met enough of its
// peers to place the stream's replicas, as right after it started.
const codeNoPlacement natsjs.ErrorCode = 10005 // no suitable peers for placement

// raced reports whether err says only that another process was creating the same stream or
// consumer at the same moment, or that the cluster cannot place it yet.
func raced(err error) bool {
	switch apiCode(err) {
	case codeStreamNameInUse, codeSubjectsOverlap, codeConsumerExists, codeConsumerNameInUse, codeNoPlacement:
		return true
	}
	return false
}

// retried runs op, an idempotent request of Open, once per slice of the call timeout until it gets
// an answer or ctx ends; it also tries again, after a pause, when op failed only because another
// process was creating the same stream or consumer, or the cluster could not place it yet, or
// with a *notYetError. A cluster drops,
// unanswered, a request to a stream whose leader is not elected yet (as right after another process
// created it): without a second try, one lost request would spend Open's whole budget.
func retried[T any](ctx context.Context, b *Backend, op func(context.Context) (T, error)) (T, error) {
	slice := max(b.o.callTimeout/4, 100*time.Millisecond)
	for try := 1; ; try++ {
		tctx, cancel := context.WithTimeout(ctx, slice)
		v, err := op(tctx)
		cancel()
		lost := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
		if err == nil || ctx.Err() != nil || !lost && !raced(err) && !errors.As(err, new(*notYetError)) {
			return v, err
		}
		if lost {
			continue
		}
		if !calls.Sleep(ctx, racePauses.Delay(try-1, 0)) {
			return v, err
		}
	}
}

// notYetError is a "not found" or "no responders" answer about a stream or consumer that Open
// has just found or created: a node of a cluster may not know of it yet, as the creation has
// not reached it; retried tries again after a pause.
type notYetError struct{ err error }

func (e *notYetError) Error() string { return e.err.Error() }
func (e *notYetError) Unwrap() error { return e.err }

// known is op, a request about a stream or consumer known to exist, whose "not found" and "no
// responders" answers are a *notYetError, for retried.
func known[T any](op func(context.Context) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		v, err := op(ctx)
		if errors.Is(err, natsjs.ErrStreamNotFound) || errors.Is(err, natsjs.ErrConsumerNotFound) ||
			errors.Is(err, nats.ErrNoResponders) {
			err = &notYetError{err}
		}
		return v, err
	}
}

// racePauses are retried's pauses after a creation that raced another process's: 20ms after
// the first, 20ms longer after each, up to 200ms.
var racePauses = backoff.Linear(20*time.Millisecond, 200*time.Millisecond)

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
