package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/jetstream/internal/serverversion"
)

// Open implements driver.Backend: it agrees the queue's shared settings with the other processes
// (see settings: the first process to open the queue sets them, later ones must ask for the
// same), then creates the streams or checks them. The work stream holds at most cfg.Capacity
// jobs (DiscardNew: the broker refuses more, and Enqueue applies cfg.Overflow); its duplicate
// window is cfg.DedupHorizon. The dead-letter stream holds at most cfg.DeadLetterLimit dead
// letters (DiscardNew too: Bury evicts the oldest itself, and reports it).
func (b *Backend) Open(ctx context.Context, cfg driver.Config) error {
	calls.Made(b.js != nil)
	if err := cfg.Validate(); err != nil {
		return err
	}
	b.unrest.Store(time.Now().UnixNano()) // what happened before Open was not seen
	if v := b.nc.ConnectedServerVersion(); v != "" && !serverversion.AtLeast(v, 2, 9, 0) {
		// 2.9 brought the direct "next message on a subject" read that ordering keys and
		// dead-letter listing use; NakWithDelay needs 2.7.1.
		return fmt.Errorf("jetstream: nats-server %s is too old: corral's queue needs 2.9.0 or later", v)
	}
	// Open makes a dozen requests: bound them together.
	ctx, cancel := calls.Context(ctx, 4*b.o.callTimeout)
	defer cancel()
	return b.life.Open(calls, func() error {
		o, err := b.open(ctx, cfg)
		if err != nil {
			return err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.cfg, b.set, b.work, b.dead, b.state, b.cons = cfg, o.set, o.work, o.dead, o.state, o.cons
		b.done, b.tombstones, b.recordTTL, b.lateNak = o.done, o.tombstones, o.recordTTL, o.lateNak
		b.lease = o.set.Lease
		return nil
	})
}

// openedQueue is what Open found or made on the servers, for the Backend's fields.
type openedQueue struct {
	set                     settings
	state, work, dead, done natsjs.Stream // done is nil unless tombstones
	tombstones              bool
	lateNak                 time.Duration // see Backend.lateNak
	recordTTL               bool          // the state stream allows per-message TTLs (see dropState)
	cons                    natsjs.Consumer
}

// open makes Open's requests: the shared settings, the streams, the consumer and Stats' own
// handles. Run by b.life.Open, one at a time.
func (b *Backend) open(ctx context.Context, cfg driver.Config) (openedQueue, error) {
	var o openedQueue
	var err error
	if o.state, o.set, err = b.openSettings(ctx, b.settingsFor(cfg)); err != nil {
		return o, err
	}
	// The server's answer, not the request: a server that does not know the setting
	// leaves it out.
	o.recordTTL = o.state.CachedInfo().Config.AllowMsgTTL
	// See resurrect.go: a 2.9 server needs records of the acked jobs.
	o.tombstones = !serverversion.AtLeast(b.nc.ConnectedServerVersion(), 2, 10, 0)
	if !serverversion.AtLeast(b.nc.ConnectedServerVersion(), 2, 10, 16) {
		o.lateNak = 2 * pullHeartbeat // see drainPump
	}
	for _, spec := range b.streamSpecs(cfg, &o) {
		st, err := b.createStream(ctx, spec.config)
		if err != nil {
			return o, b.fail(ctx, spec.what, err)
		}
		if spec.check != nil {
			if err := spec.check(st); err != nil {
				return o, err
			}
		}
		*spec.into = st
	}
	if o.cons, err = b.ensureConsumer(ctx, o.work, o.set.Lease); err != nil {
		return o, err
	}
	return o, b.openStatHandles(ctx)
}

// openSettings creates the state stream, where the settings are recorded, and agrees the
// settings with it. An existing queue's settings are agreed before its state stream is
// touched, so that it is updated only if they agree (or WithReconfigure).
func (b *Backend) openSettings(ctx context.Context, mine settings) (natsjs.Stream, settings, error) {
	// Per-message TTLs (nats-server 2.11) for a new stream, or with WithReconfigure; once on,
	// the server refuses to turn them off, so an existing stream keeps what it has: a process
	// of an earlier version, whose Open asks for them off, could not open the queue.
	ttl := serverversion.AtLeast(b.nc.ConnectedServerVersion(), 2, 11, 0)
	state, err := b.stream(ctx, b.stateStream)
	switch {
	case err == nil:
		if mine, err = b.agree(ctx, state, mine); err != nil {
			return nil, mine, err
		}
		ttl = ttl && b.o.reconfigure || state.CachedInfo().Config.AllowMsgTTL
	case errors.Is(err, natsjs.ErrStreamNotFound):
	default:
		return nil, mine, b.fail(ctx, "open stream "+b.stateStream, err)
	}
	config := b.streamConfig(b.stateStream, "settings and retry state of jobs",
		b.statePrefix+">", b.markPrefix+">", b.settingsSubject())
	config.MaxMsgsPerSubject, config.AllowMsgTTL = 1, ttl
	state, err = b.createStream(ctx, config)
	if err != nil {
		return nil, mine, b.fail(ctx, "stream "+b.stateStream, err)
	}
	mine, err = b.agree(ctx, state, mine)
	return state, mine, err
}

// streamSpec is one of the queue's streams after the state stream, as Open creates it or
// updates it.
type streamSpec struct {
	config natsjs.StreamConfig
	what   string                    // the stream, as Open's error names it
	check  func(natsjs.Stream) error // if not nil, run on the stream made
	into   *natsjs.Stream            // where Open keeps it
}

// streamSpecs returns the streams that hold the jobs of a queue with config cfg and o's shared
// settings, in the order Open makes them, each to be kept in o.
func (b *Backend) streamSpecs(cfg driver.Config, o *openedQueue) []streamSpec {
	maxMsgs := int64(-1)
	if cfg.Capacity > 0 {
		maxMsgs = int64(cfg.Capacity)
	}
	// Without a horizon, IDs are not sent as Nats-Msg-Id, and the window does not matter.
	dup := cfg.DedupHorizon
	if dup == 0 {
		dup = time.Second
	}
	work := b.streamConfig(b.workStream, "jobs", b.jobPrefix+">")
	work.Retention, work.MaxMsgs, work.Discard, work.Duplicates = natsjs.WorkQueuePolicy, maxMsgs, natsjs.DiscardNew, dup
	dead := b.streamConfig(b.deadStream, "dead letters", b.deadPrefix+">")
	// One subject per job ID, one dead letter per ID: a later job that reused the ID and died
	// replaces the older dead letter (see driver.Backend). At the limit the broker refuses a new
	// one, and Bury evicts the oldest itself: never a silent trim.
	dead.MaxMsgsPerSubject, dead.MaxMsgs, dead.Discard = 1, int64(o.set.DeadLetterLimit), natsjs.DiscardNew
	dead.Duplicates = 10 * time.Minute
	specs := []streamSpec{{
		config: work,
		what:   fmt.Sprintf("stream %s (dedup horizon %v)", b.workStream, cfg.DedupHorizon),
		check: func(work natsjs.Stream) error {
			if got := work.CachedInfo().Config.Duplicates; cfg.DedupHorizon > 0 && got < cfg.DedupHorizon {
				return fmt.Errorf("jetstream: stream %s keeps IDs for %v, shorter than the dedup horizon %v", b.workStream, got, cfg.DedupHorizon)
			}
			return nil
		},
		into: &o.work,
	}, {config: dead, what: "stream " + b.deadStream, into: &o.dead}}
	if o.tombstones {
		done := b.streamConfig(b.doneStream, "recently acked jobs, for nats-server 2.9", b.donePrefix+">")
		done.MaxAge = tombstoneAge
		specs = append(specs, streamSpec{config: done, what: "stream " + b.doneStream, into: &o.done})
	}
	return specs
}

// streamConfig returns the configuration of the queue's stream name, described as holding what,
// on subjects: limits retention, and the storage and replicas of every stream of the queue. The
// caller sets the rest.
func (b *Backend) streamConfig(name, what string, subjects ...string) natsjs.StreamConfig {
	c := natsjs.StreamConfig{
		Name:        name,
		Description: "corral queue " + b.name + ": " + what,
		Subjects:    subjects,
		Retention:   natsjs.LimitsPolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    b.o.replicas,
	}
	if b.o.memory {
		c.Storage = natsjs.MemoryStorage
	}
	return c
}

// openStatHandles looks up the handles that Stats (and evictOldest) make their info requests
// on (see statsMu), and removes the acked jobs a server restart left behind.
func (b *Backend) openStatHandles(ctx context.Context) error {
	b.statsMu.Lock()
	defer b.statsMu.Unlock()
	var err error
	if b.statWork, err = b.knownStream(ctx, b.workStream); err != nil {
		return b.fail(ctx, "stream "+b.workStream, err)
	}
	if b.statDead, err = b.knownStream(ctx, b.deadStream); err != nil {
		return b.fail(ctx, "stream "+b.deadStream, err)
	}
	if b.statState, err = b.knownStream(ctx, b.stateStream); err != nil {
		return b.fail(ctx, "stream "+b.stateStream, err)
	}
	if b.statCons, err = retried(ctx, b, known(func(ctx context.Context) (natsjs.Consumer, error) {
		return b.statWork.Consumer(ctx, b.consumerName)
	})); err != nil {
		return b.fail(ctx, "consumer "+b.consumerName, err)
	}
	if _, err := b.removeAcked(ctx, b.statWork.CachedInfo(), b.statCons.CachedInfo()); err != nil {
		return b.fail(ctx, "open", err)
	}
	return nil
}

// stream looks up the stream called name for Open (see retried).
func (b *Backend) stream(ctx context.Context, name string) (natsjs.Stream, error) {
	return retried(ctx, b, func(ctx context.Context) (natsjs.Stream, error) { return b.js.Stream(ctx, name) })
}

// knownStream looks up the stream called name, which Open has just found or created (see known).
func (b *Backend) knownStream(ctx context.Context, name string) (natsjs.Stream, error) {
	return retried(ctx, b, known(func(ctx context.Context) (natsjs.Stream, error) { return b.js.Stream(ctx, name) }))
}

// createStream creates the stream of cfg, or updates it to cfg, for Open (see retried). A
// "not found" answer is a *notYetError (see known), tried again: create-or-update has no
// use for it but a race, as when another process's creation of the same stream has not
// reached every node of a cluster (CI saw it in TestConcurrentOpenCluster).
func (b *Backend) createStream(ctx context.Context, cfg natsjs.StreamConfig) (natsjs.Stream, error) {
	return retried(ctx, b, known(func(ctx context.Context) (natsjs.Stream, error) { return b.js.CreateOrUpdateStream(ctx, cfg) }))
}

// ensureConsumer creates or updates the durable pull consumer. ackWait 0 keeps the one the
// consumer has (30s for a new one).
func (b *Backend) ensureConsumer(ctx context.Context, work natsjs.Stream, ackWait time.Duration) (natsjs.Consumer, error) {
	cfg := natsjs.ConsumerConfig{
		Durable:       b.consumerName,
		Description:   "corral queue " + b.name + ": workers",
		AckPolicy:     natsjs.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1,
		MaxAckPending: -1,
		FilterSubject: b.jobPrefix + ">",
		Replicas:      b.o.replicas,
	}
	if ackWait == 0 {
		if c, err := retried(ctx, b, func(ctx context.Context) (natsjs.Consumer, error) {
			return work.Consumer(ctx, b.consumerName)
		}); err == nil {
			return c, nil
		}
	}
	c, err := retried(ctx, b, func(ctx context.Context) (natsjs.Consumer, error) {
		return work.CreateOrUpdateConsumer(ctx, cfg)
	})
	if err != nil {
		return nil, b.fail(ctx, fmt.Sprintf("consumer %s on %s", b.consumerName, b.workStream), err)
	}
	return c, nil
}

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

// retried runs op, an idempotent request of Open, once per slice of the call timeout until it
// gets an answer or ctx ends; it also tries again, after a pause, when op failed only because
// another process was creating the same stream or consumer, or the cluster could not place it
// yet, or with a *notYetError. A cluster drops, unanswered, a request to a stream whose leader
// is not elected yet (as right after another process created it): without a second try, one
// lost request would spend Open's whole budget.
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
