package jetstream

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream/internal/serverversion"
)

// Backend is a queue.Backend on NATS JetStream. Pass it to queue.New with queue.WithBackend.
//
// One Backend serves one queue.Queue in one process; several processes (each with its own
// Backend and Queue of the same name) share the queue's jobs. A Backend is safe for concurrent
// use. It starts no goroutine of its own, but the NATS client pulls messages in the background
// once a consumer receives: call Close when done with it.
type Backend struct {
	js   natsjs.JetStream
	nc   *nats.Conn
	name string
	o    options

	// Names, fixed by New.
	workStream, deadStream, stateStream, consumerName string
	jobPrefix, deadPrefix, statePrefix, markPrefix    string

	mu     sync.Mutex // guards the fields below
	opened bool
	closed bool
	cfg    queue.Config
	work   natsjs.Stream
	dead   natsjs.Stream
	state  natsjs.Stream
	cons   natsjs.Consumer
	lease  time.Duration // the consumer's AckWait; 0 until the first Receive
	pump   *pump         // nil until the first Receive and after the pump stopped
	// receivers counts Receive calls waiting on pump.
	receivers int

	bufFresh atomic.Int64 // prefetched first deliveries, not yet handed out (for Stats)

	// Info requests update the cached info of the handle they are made on, which the
	// client reads unsynchronised in other requests: Stats uses handles of its own.
	statsMu                       sync.Mutex
	statWork, statDead, statState natsjs.Stream
	statCons                      natsjs.Consumer
}

// Option configures a Backend in New.
type Option interface{ apply(*options) }

type options struct {
	replicas int
	memory   bool
	prefetch int
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithReplicas sets how many servers of a NATS cluster keep each of the queue's streams (1 by
// default). Use 3 in production clusters.
func WithReplicas(n int) Option { return optionFunc(func(o *options) { o.replicas = n }) }

// WithMemoryStorage keeps the queue's streams in the servers' memory instead of on disk: faster,
// and lost when the servers restart.
func WithMemoryStorage() Option { return optionFunc(func(o *options) { o.memory = true }) }

// WithPrefetch sets how many jobs this process asks the broker for ahead of its workers (8 by
// default). A prefetched job's lease is restarted when a worker takes it, but a job that waits
// in the prefetch buffer longer than the lease is redelivered: keep n near the number of
// workers.
func WithPrefetch(n int) Option { return optionFunc(func(o *options) { o.prefetch = n }) }

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// New returns a Backend for the queue called name (letters, digits, '-' and '_'), whose jobs
// live in the stream CORRAL_<name> under the subjects corral.<name>.job.>, whose dead letters
// live in CORRAL_<name>_DEAD under corral.<name>.dead.>, and whose per-job retry state lives in
// CORRAL_<name>_STATE. Streams and the durable consumer "corral" are created (or updated) when
// the queue opens the backend. New does no I/O.
func New(js natsjs.JetStream, name string, opts ...Option) (*Backend, error) {
	if js == nil {
		return nil, errors.New("jetstream: nil JetStream")
	}
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("jetstream: invalid queue name %q (want 1-64 of [A-Za-z0-9_-])", name)
	}
	o := options{replicas: 1, prefetch: 8}
	for _, opt := range opts {
		opt.apply(&o)
	}
	if o.replicas < 1 || o.prefetch < 1 {
		return nil, fmt.Errorf("jetstream: replicas %d and prefetch %d must be positive", o.replicas, o.prefetch)
	}
	return &Backend{
		js: js, nc: js.Conn(), name: name, o: o,
		workStream:   "CORRAL_" + name,
		deadStream:   "CORRAL_" + name + "_DEAD",
		stateStream:  "CORRAL_" + name + "_STATE",
		consumerName: "corral",
		jobPrefix:    "corral." + name + ".job.",
		deadPrefix:   "corral." + name + ".dead.",
		statePrefix:  "corral." + name + ".state.",
		markPrefix:   "corral." + name + ".mark.",
	}, nil
}

var _ queue.Backend = (*Backend)(nil)

// Headers of job and dead-letter messages.
const (
	hdrID        = "Corral-Id"
	hdrKey       = "Corral-Key"
	hdrEnqueued  = "Corral-Enqueued-At"
	hdrNotBefore = "Corral-Not-Before"
	hdrStartBy   = "Corral-Start-By"
	hdrReason    = "Corral-Reason"
	hdrAttempt   = "Corral-Attempt"
	hdrHistory   = "Corral-History"
	hdrDeadAt    = "Corral-Dead-At"
)

// token encodes s as one NATS subject token (base64url). The empty string, which has no key,
// is "_", which no non-empty string encodes to.
func token(s string) string {
	if s == "" {
		return "_"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func (b *Backend) jobSubject(key, id string) string {
	return b.jobPrefix + token(key) + "." + token(id)
}
func (b *Backend) keySubjects(key string) string { return b.jobPrefix + token(key) + ".*" }

// Open implements queue.Backend: it creates or updates the streams. The work stream holds at
// most cfg.Capacity jobs (DiscardNew: the broker refuses more, and Enqueue applies
// cfg.Overflow); its duplicate window is cfg.DedupHorizon.
func (b *Backend) Open(ctx context.Context, cfg queue.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if v := b.nc.ConnectedServerVersion(); v != "" && !serverversion.AtLeast(v, 2, 9, 0) {
		// 2.9 brought the direct "next message on a subject" read that ordering keys and
		// dead-letter listing use; NakWithDelay needs 2.7.1.
		return fmt.Errorf("jetstream: nats-server %s is too old: corral's queue needs 2.9.0 or later", v)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opened {
		return errors.New("jetstream: backend already opened")
	}
	storage := natsjs.FileStorage
	if b.o.memory {
		storage = natsjs.MemoryStorage
	}
	maxMsgs := int64(-1)
	if cfg.Capacity > 0 {
		maxMsgs = int64(cfg.Capacity)
	}
	// Without a horizon, IDs are not sent as Nats-Msg-Id, and the window does not matter.
	dup := cfg.DedupHorizon
	if dup == 0 {
		dup = time.Second
	}
	work, err := b.js.CreateOrUpdateStream(ctx, natsjs.StreamConfig{
		Name:        b.workStream,
		Description: "corral queue " + b.name + ": jobs",
		Subjects:    []string{b.jobPrefix + ">"},
		Retention:   natsjs.WorkQueuePolicy,
		MaxMsgs:     maxMsgs,
		Discard:     natsjs.DiscardNew,
		Duplicates:  dup,
		Storage:     storage,
		Replicas:    b.o.replicas,
	})
	if err != nil {
		return fmt.Errorf("jetstream: stream %s (dedup horizon %v): %w", b.workStream, cfg.DedupHorizon, err)
	}
	if got := work.CachedInfo().Config.Duplicates; cfg.DedupHorizon > 0 && got < cfg.DedupHorizon {
		return fmt.Errorf("jetstream: stream %s keeps IDs for %v, shorter than the dedup horizon %v", b.workStream, got, cfg.DedupHorizon)
	}
	dead, err := b.js.CreateOrUpdateStream(ctx, natsjs.StreamConfig{
		Name:        b.deadStream,
		Description: "corral queue " + b.name + ": dead letters",
		Subjects:    []string{b.deadPrefix + ">"},
		Retention:   natsjs.LimitsPolicy,
		Duplicates:  10 * time.Minute,
		// One subject per job ID, one dead letter per ID: a later job that reused the ID
		// and died replaces the older dead letter (see queue.Backend).
		MaxMsgsPerSubject: 1,
		Storage:           storage,
		Replicas:          b.o.replicas,
	})
	if err != nil {
		return fmt.Errorf("jetstream: stream %s: %w", b.deadStream, err)
	}
	state, err := b.js.CreateOrUpdateStream(ctx, natsjs.StreamConfig{
		Name:              b.stateStream,
		Description:       "corral queue " + b.name + ": retry state of jobs",
		Subjects:          []string{b.statePrefix + ">", b.markPrefix + ">"},
		Retention:         natsjs.LimitsPolicy,
		MaxMsgsPerSubject: 1,
		Storage:           storage,
		Replicas:          b.o.replicas,
	})
	if err != nil {
		return fmt.Errorf("jetstream: stream %s: %w", b.stateStream, err)
	}
	cons, err := b.ensureConsumer(ctx, work, 0)
	if err != nil {
		return err
	}
	b.statsMu.Lock()
	defer b.statsMu.Unlock()
	if b.statWork, err = b.js.Stream(ctx, b.workStream); err != nil {
		return fmt.Errorf("jetstream: stream %s: %w", b.workStream, err)
	}
	if b.statDead, err = b.js.Stream(ctx, b.deadStream); err != nil {
		return fmt.Errorf("jetstream: stream %s: %w", b.deadStream, err)
	}
	if b.statState, err = b.js.Stream(ctx, b.stateStream); err != nil {
		return fmt.Errorf("jetstream: stream %s: %w", b.stateStream, err)
	}
	if b.statCons, err = b.statWork.Consumer(ctx, b.consumerName); err != nil {
		return fmt.Errorf("jetstream: consumer %s: %w", b.consumerName, err)
	}
	if _, err := b.removeAcked(ctx, b.statWork.CachedInfo(), b.statCons.CachedInfo()); err != nil {
		return fmt.Errorf("jetstream: open: %w", err)
	}
	b.opened, b.cfg, b.work, b.dead, b.state, b.cons = true, cfg, work, dead, state, cons
	return nil
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
		if c, err := work.Consumer(ctx, b.consumerName); err == nil {
			return c, nil
		}
	}
	c, err := work.CreateOrUpdateConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("jetstream: consumer %s on %s: %w", b.consumerName, b.workStream, err)
	}
	return c, nil
}

func (b *Backend) opened0() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.opened {
		return errors.New("jetstream: backend not opened")
	}
	if b.closed {
		return queue.ErrClosed
	}
	return nil
}

func apiCode(err error) natsjs.ErrorCode {
	var e *natsjs.APIError
	if errors.As(err, &e) {
		return e.ErrorCode
	}
	return 0
}

const (
	codeFull      natsjs.ErrorCode = 10077 // maximum messages exceeded
	codeWrongLast natsjs.ErrorCode = 10071 // wrong last sequence
	codeWrongLR   natsjs.ErrorCode = 10164 // wrong last sequence, replicated
)

func putTime(h nats.Header, k string, t time.Time) {
	if !t.IsZero() {
		h.Set(k, strconv.FormatInt(t.UnixNano(), 10))
	}
}

func getTime(h nats.Header, k string) time.Time {
	v := h.Get(k)
	if v == "" {
		return time.Time{}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func jobHeader(m *queue.Message) nats.Header {
	h := nats.Header{}
	h.Set(hdrID, m.ID)
	if m.Key != "" {
		h.Set(hdrKey, m.Key)
	}
	putTime(h, hdrEnqueued, m.EnqueuedAt)
	putTime(h, hdrNotBefore, m.NotBefore)
	putTime(h, hdrStartBy, m.StartBy)
	return h
}

func messageFrom(h nats.Header, body []byte) queue.Message {
	return queue.Message{
		ID:         h.Get(hdrID),
		Key:        h.Get(hdrKey),
		Body:       body,
		EnqueuedAt: getTime(h, hdrEnqueued),
		NotBefore:  getTime(h, hdrNotBefore),
		StartBy:    getTime(h, hdrStartBy),
	}
}

// Enqueue implements queue.Backend. The job is published to corral.<name>.job.<key>.<id> with
// "no message on this subject" as a precondition (so an ID is taken while its job is stored)
// and, when the queue has a dedup horizon, the job ID as Nats-Msg-Id (so it stays taken for the
// horizon). At capacity the broker refuses the message and the overflow policy decides: Block
// retries until ctx ends, Reject and DropNewest fail, DropOldest dead-letters the oldest job
// waiting for delivery and retries.
func (b *Backend) Enqueue(ctx context.Context, m queue.Message) (queue.EnqueueResult, error) {
	var res queue.EnqueueResult
	if err := b.opened0(); err != nil {
		return res, err
	}
	if m.EnqueuedAt.IsZero() {
		m.EnqueuedAt = time.Now()
	}
	msg := &nats.Msg{Subject: b.jobSubject(m.Key, m.ID), Header: jobHeader(&m), Data: m.Body}
	popts := []natsjs.PublishOpt{natsjs.WithExpectLastSequencePerSubject(0)}
	if b.cfg.DedupHorizon > 0 {
		popts = append(popts, natsjs.WithMsgID(m.ID))
	}
	wait := time.Millisecond
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		ack, err := b.js.PublishMsg(ctx, msg, popts...)
		if err == nil {
			if ack.Duplicate {
				return res, queue.ErrDuplicate
			}
			if time.Until(m.NotBefore) > 10*time.Millisecond {
				// A consumer that takes the job before its start time removes this marker
				// when the job comes back.
				if err := b.mark(ctx, m.ID, markWaiting); err != nil {
					return res, err
				}
			}
			return res, nil
		}
		if ctx.Err() != nil {
			return res, context.Cause(ctx)
		}
		switch apiCode(err) {
		case codeWrongLast, codeWrongLR:
			return res, queue.ErrDuplicate
		case codeFull:
		default:
			return res, fmt.Errorf("jetstream: enqueue %s: %w", m.ID, err)
		}
		switch b.cfg.Overflow {
		case queue.Reject:
			return res, queue.ErrFull
		case queue.DropNewest:
			return res, queue.ErrDropped
		case queue.DropOldest:
			id, err := b.evictOldest(ctx)
			if err != nil {
				return res, err
			}
			if id != "" {
				res.Evicted = append(res.Evicted, id)
				continue
			}
			return res, queue.ErrFull // every stored job is being handled
		}
		// Block: the broker has no "wait for room"; poll with a capped backoff.
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return res, context.Cause(ctx)
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// evictOldest takes the oldest job waiting for delivery from the consumer (so that no worker
// can be handed it meanwhile), writes it to the dead letters with reason overflow and removes
// it. It returns "" if no job is waiting.
func (b *Backend) evictOldest(ctx context.Context) (string, error) {
	// A job prefetched but not handed out is not leased, and older than any job the consumer
	// has not delivered yet: evict it first.
	victim := b.takePrefetched()
	b.mu.Lock()
	cons := b.cons // replaced by pumpFor, under b.mu
	b.mu.Unlock()
	for try := 0; victim == nil; try++ {
		if err := ctx.Err(); err != nil {
			return "", context.Cause(ctx)
		}
		// Not FetchNoWait: the server may answer "no messages" for a job published an
		// instant ago, before the consumer has seen it, or when it is slow to answer.
		batch, err := cons.Fetch(1, natsjs.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			return "", fmt.Errorf("jetstream: evict: %w", err)
		}
		for m := range batch.Messages() {
			victim = m
		}
		if err := batch.Error(); err != nil && victim == nil {
			return "", fmt.Errorf("jetstream: evict: %w", err)
		}
		if victim != nil {
			break
		}
		// Nothing came: either every stored job is leased, or the fetch was too slow.
		// The consumer's count of jobs not yet delivered tells which (asked through the
		// handle kept for such queries: see statCons).
		b.statsMu.Lock()
		info, err := b.statCons.Info(ctx)
		b.statsMu.Unlock()
		if err != nil {
			return "", fmt.Errorf("jetstream: evict: %w", err)
		}
		if info.NumPending == 0 || try == 20 {
			return "", nil
		}
	}
	d, err := b.delivery(ctx, victim)
	if err != nil {
		return "", err
	}
	now := time.Now()
	a := queue.Attempt{Number: d.Attempt, Start: now, End: now, Error: "queue: evicted by overflow (drop oldest)"}
	if err := b.bury(ctx, d, queue.ReasonOverflow, a); err != nil {
		return "", err
	}
	if d.Token.(*delivered).marked {
		if err := b.unmark(ctx, d.ID); err != nil {
			return "", err
		}
	}
	return d.ID, nil
}

// takePrefetched takes the oldest message from the prefetch buffer, if any, so that no Receive
// hands it out.
func (b *Backend) takePrefetched() natsjs.Msg {
	b.mu.Lock()
	p := b.pump
	b.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case a := <-p.buf:
		if a.fresh {
			b.bufFresh.Add(-1)
		}
		return a.msg
	default:
		return nil
	}
}

// delivered is the backend's part of a queue.Delivery (its Token).
type delivered struct {
	msg      natsjs.Msg
	mu       sync.Mutex
	leaseEnd time.Time // guarded by mu
	st       jobState
	marked   bool // the job may have a marker
}

// jobState is a job's retry state, kept in the state stream while the job is stored and has
// been delivered more than once: the failed attempts and the deliveries that were not attempts
// (delayed start, busy ordering key, release at shutdown).
type jobState struct {
	Skips int `json:"skips,omitempty"`
	// Released says a delivery was handed to a consumer and given back by
	// Release (a skip, so not an attempt): the job has been started.
	Released bool            `json:"released,omitempty"`
	History  []queue.Attempt `json:"history,omitempty"`
}

func (b *Backend) stateSubject(id string) string { return b.statePrefix + token(id) }

func (b *Backend) loadState(ctx context.Context, id string) (jobState, error) {
	var st jobState
	raw, err := b.state.GetLastMsgForSubject(ctx, b.stateSubject(id))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("jetstream: load state of %s: %w", id, err)
	}
	if err := json.Unmarshal(raw.Data, &st); err != nil {
		return st, fmt.Errorf("jetstream: state of %s: %w", id, err)
	}
	return st, nil
}

func (b *Backend) saveState(ctx context.Context, id string, st jobState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if _, err := b.js.Publish(ctx, b.stateSubject(id), data); err != nil {
		return fmt.Errorf("jetstream: save state of %s: %w", id, err)
	}
	return nil
}

func (b *Backend) dropState(ctx context.Context, id string) error {
	err := b.state.Purge(ctx, natsjs.WithPurgeSubject(b.stateSubject(id)))
	if err != nil {
		return fmt.Errorf("jetstream: drop state of %s: %w", id, err)
	}
	return nil
}

// delivery decodes m and its retry state into a Delivery, and removes the job's marker: a
// delivered job is neither delayed nor handed back.
func (b *Backend) delivery(ctx context.Context, m natsjs.Msg) (*queue.Delivery, error) {
	md, err := m.Metadata()
	if err != nil {
		return nil, fmt.Errorf("jetstream: message metadata: %w", err)
	}
	tok := &delivered{msg: m}
	qm := messageFrom(m.Headers(), m.Data())
	if md.NumDelivered > 1 {
		if tok.st, err = b.loadState(ctx, qm.ID); err != nil {
			return nil, err
		}
	}
	tok.marked = md.NumDelivered > 1 || !qm.NotBefore.IsZero()
	qm.Attempt = int(md.NumDelivered) - tok.st.Skips
	qm.Attempt = max(qm.Attempt, 1)
	return &queue.Delivery{Message: qm, Token: tok, Seq: md.Sequence.Stream,
		Redelivered: qm.Attempt > 1 || tok.st.Released}, nil
}

// ack sends an acknowledgement (+ACK, -NAK, +WPI, +TERM) and waits for the server to confirm
// it, which the nats.go API does only for +ACK.
func (b *Backend) ack(ctx context.Context, m natsjs.Msg, body string) error {
	if m.Reply() == "" {
		return errors.New("jetstream: message has no reply subject")
	}
	if _, err := b.nc.RequestWithContext(ctx, m.Reply(), []byte(body)); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("jetstream: %s: %w", body, err)
	}
	return nil
}

func nakDelay(d time.Duration) string {
	if d <= 0 {
		return "-NAK"
	}
	return `-NAK {"delay":` + strconv.FormatInt(int64(d), 10) + `}`
}

// skip records that this delivery of d was not an attempt, marks the job and asks the broker
// to deliver it again after delay.
func (b *Backend) skip(ctx context.Context, d *queue.Delivery, delay time.Duration, kind string) error {
	tok := d.Token.(*delivered)
	tok.st.Skips++
	if err := b.saveState(ctx, d.ID, tok.st); err != nil {
		return err
	}
	if err := b.remark(ctx, tok, d.ID, kind); err != nil {
		return err
	}
	return b.ack(ctx, tok.msg, nakDelay(delay))
}

// Markers, one message at corral.<name>.mark.<kind>.<id> per job that the broker's counts
// misplace, let Stats tell delayed and handed-back jobs from leased and ready ones.
const (
	markWaiting = "u" // not delivered yet, start time to come: delayed, not ack pending
	markDelayed = "d" // handed back with a delay: delayed, but ack pending
	markReady   = "r" // handed back ready (released, or behind its ordering key): ack pending
)

func (b *Backend) mark(ctx context.Context, id, kind string) error {
	if _, err := b.js.Publish(ctx, b.markPrefix+kind+"."+token(id), nil); err != nil {
		return fmt.Errorf("jetstream: mark %s: %w", id, err)
	}
	return nil
}

// remark gives the job of tok the marker kind alone. The new marker is written before the old
// ones are removed, so that Stats never sees the job unmarked.
func (b *Backend) remark(ctx context.Context, tok *delivered, id, kind string) error {
	if err := b.mark(ctx, id, kind); err != nil {
		return err
	}
	if tok.marked {
		for _, k := range []string{markWaiting, markDelayed, markReady} {
			if k == kind {
				continue
			}
			if err := b.state.Purge(ctx, natsjs.WithPurgeSubject(b.markPrefix+k+"."+token(id))); err != nil {
				return fmt.Errorf("jetstream: unmark %s: %w", id, err)
			}
		}
	}
	tok.marked = true
	return nil
}

func (b *Backend) unmark(ctx context.Context, id string) error {
	if err := b.state.Purge(ctx, natsjs.WithPurgeSubject(b.markPrefix+"*."+token(id))); err != nil {
		return fmt.Errorf("jetstream: unmark %s: %w", id, err)
	}
	return nil
}

// Receive implements queue.Backend. The consumer's AckWait is the lease: the first Receive
// sets it, and a Receive with another lease updates it (every process of a queue should use
// the same lease). A job whose start time has not come, or whose ordering key has an earlier
// job stored, is handed back to the broker with a delay and not counted as an attempt.
//
// Jobs are prefetched (WithPrefetch). When a Receive ends because its ctx ended and no other
// Receive is running, prefetching stops and the prefetched jobs are released to the broker.
func (b *Backend) Receive(ctx context.Context, lease time.Duration, d *queue.Delivery) error {
	if lease <= 0 {
		return fmt.Errorf("jetstream: lease %v must be positive", lease)
	}
	for {
		p, err := b.pumpFor(ctx, lease)
		if err != nil {
			return err
		}
		var a arrival
		var ok bool
		if ctx.Err() == nil {
			select {
			case a = <-p.buf:
				ok = true
			case <-p.stopped:
				b.mu.Lock()
				b.receivers--
				b.mu.Unlock()
				continue
			case <-p.dead:
				// The client gave up on this subscription (for example the consumer was
				// deleted): release what it prefetched and start another.
				b.mu.Lock()
				b.receivers--
				retire := b.pump == p
				if retire {
					b.pump = nil
				}
				b.mu.Unlock()
				if retire {
					b.stopPump(p)
				}
				continue
			case <-ctx.Done():
			}
		}
		b.mu.Lock()
		b.receivers--
		last := ctx.Err() != nil && b.receivers == 0 && b.pump == p
		if last {
			b.pump = nil
		}
		b.mu.Unlock()
		if ctx.Err() != nil {
			if ok {
				b.release(a)
			}
			if last {
				b.stopPump(p)
			}
			return context.Cause(ctx)
		}
		ok, err = b.take(ctx, a, lease, d)
		if err != nil || ok {
			return err
		}
	}
}

// take decides what to do with a prefetched message: hand it to the caller in d (true), or
// give it back to the broker because its start time has not come or its ordering key is busy
// (false).
func (b *Backend) take(ctx context.Context, a arrival, lease time.Duration, d *queue.Delivery) (bool, error) {
	if a.fresh {
		// Counted as prefetched until it is marked or handed out.
		defer b.bufFresh.Add(-1)
	}
	got, err := b.delivery(ctx, a.msg)
	if err != nil {
		return false, err
	}
	tok := got.Token.(*delivered)
	now := time.Now()
	if got.NotBefore.After(now) {
		return false, b.skip(ctx, got, got.NotBefore.Sub(now), markDelayed)
	}
	if got.Key != "" {
		head, err := b.work.GetMsg(ctx, 0, natsjs.WithGetMsgSubject(b.keySubjects(got.Key)))
		if err != nil && !errors.Is(err, natsjs.ErrMsgNotFound) {
			return false, fmt.Errorf("jetstream: head of key %q: %w", got.Key, err)
		}
		if err == nil && head.Sequence != got.Seq {
			delay := min(5*time.Millisecond<<min(tok.st.Skips, 5), 100*time.Millisecond)
			return false, b.skip(ctx, got, delay, markReady)
		}
	}
	if tok.marked {
		if err := b.unmark(ctx, got.ID); err != nil {
			return false, err
		}
	}
	leaseStart := a.at // the broker's lease started before the message arrived
	if age := time.Since(a.at); age > lease/4 {
		// The job waited in the prefetch buffer: restart the broker's lease.
		leaseStart = time.Now()
		if err := b.ack(ctx, a.msg, "+WPI"); err != nil {
			return false, err
		}
	}
	tok.leaseEnd = localLeaseEnd(leaseStart, lease)
	*d = *got
	return true, nil
}

// arrival is a prefetched message.
type arrival struct {
	msg   natsjs.Msg
	at    time.Time
	fresh bool // first delivery: no marker of a handed-back job counts it
}

// pump prefetches messages into buf with the client's Consume.
type pump struct {
	cc       natsjs.ConsumeContext
	dead     <-chan struct{} // cc.Closed(): closed when the client stops the subscription
	stopOnce sync.Once
	buf      chan arrival  // capacity: the prefetch
	stopping chan struct{} // closed by stopPump
	stopped  chan struct{} // closed when the pump has released everything
}

// pumpFor returns the running pump, starting it (and setting the consumer's AckWait to lease)
// if needed, and counts the caller as a receiver.
func (b *Backend) pumpFor(ctx context.Context, lease time.Duration) (*pump, error) {
	b.mu.Lock()
	if !b.opened {
		b.mu.Unlock()
		return nil, errors.New("jetstream: backend not opened")
	}
	if b.closed {
		b.mu.Unlock()
		return nil, queue.ErrClosed
	}
	var old *pump
	if b.lease != lease {
		c, err := b.ensureConsumer(ctx, b.work, lease)
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		b.cons, b.lease = c, lease
		old, b.pump = b.pump, nil
	}
	if b.pump == nil {
		p := &pump{
			buf:      make(chan arrival, b.o.prefetch),
			stopping: make(chan struct{}),
			stopped:  make(chan struct{}),
		}
		// Pull requests are sometimes dropped by the server without a word (seen with
		// nats-server 2.9 and 2.14 under concurrent publishing); the client notices only by
		// missing heartbeats, so heartbeats are frequent: a stall lasts at most about 1s.
		cc, err := b.cons.Consume(func(m natsjs.Msg) { b.arrive(p, m) },
			natsjs.PullMaxMessages(b.o.prefetch), natsjs.PullExpiry(5*time.Second),
			natsjs.PullHeartbeat(500*time.Millisecond))
		if err != nil {
			b.mu.Unlock()
			return nil, fmt.Errorf("jetstream: consume: %w", err)
		}
		p.cc, p.dead = cc, cc.Closed()
		b.pump = p
	}
	p := b.pump
	b.receivers++
	b.mu.Unlock()
	if old != nil {
		b.stopPump(old)
	}
	return p, nil
}

// arrive runs on the client's delivery goroutine for each prefetched message. It blocks while
// the buffer is full, which stops the client from pulling more.
func (b *Backend) arrive(p *pump, m natsjs.Msg) {
	a := arrival{msg: m, at: time.Now()}
	if md, err := m.Metadata(); err == nil && md.NumDelivered == 1 {
		a.fresh = true
		b.bufFresh.Add(1)
	}
	select {
	case p.buf <- a:
	case <-p.stopping:
		b.release(a)
	}
}

// stopPump stops p and releases the messages it prefetched.
func (b *Backend) stopPump(p *pump) {
	p.stopOnce.Do(func() { b.stopPump1(p) })
}

func (b *Backend) stopPump1(p *pump) {
	close(p.stopping)
	p.cc.Drain()
	t := time.NewTimer(10 * time.Second)
	select {
	case <-p.cc.Closed():
	case <-t.C:
	}
	t.Stop()
	for {
		select {
		case a := <-p.buf:
			b.release(a)
			continue
		default:
		}
		break
	}
	close(p.stopped)
}

// release hands a prefetched message back to the broker, not counted as an attempt.
func (b *Backend) release(a arrival) {
	if a.fresh {
		defer b.bufFresh.Add(-1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := b.delivery(ctx, a.msg)
	if err == nil {
		err = b.skip(ctx, d, 0, markReady)
	}
	_ = err // the broker redelivers the message after its lease anyway
}

func (b *Backend) token(d *queue.Delivery) (*delivered, error) {
	tok, ok := d.Token.(*delivered)
	if !ok || tok == nil {
		return nil, errors.New("jetstream: delivery not from this backend")
	}
	return tok, nil
}

// localLeaseEnd is when this process stops trusting a lease of length lease that the broker
// started no earlier than start: a little before the broker's own end, so that a delivery the
// broker may already have given to someone else is never settled (it returns ErrLeaseLost).
// The margin, a tenth of the lease up to a second, costs nothing to a consumer that renews
// its leases long before they end.
func localLeaseEnd(start time.Time, lease time.Duration) time.Time {
	return start.Add(lease - min(lease/10, time.Second))
}

// leased returns d's token if its lease has not ended.
func (b *Backend) leased(d *queue.Delivery) (*delivered, error) {
	tok, err := b.token(d)
	if err != nil {
		return nil, err
	}
	tok.mu.Lock()
	end := tok.leaseEnd
	tok.mu.Unlock()
	if !time.Now().Before(end) {
		return nil, queue.ErrLeaseLost
	}
	return tok, nil
}

// Extend implements queue.Backend with InProgress, which restarts the broker's lease at the
// consumer's AckWait (the lease of Receive) whatever lease is asked for.
func (b *Backend) Extend(ctx context.Context, d *queue.Delivery, lease time.Duration) error {
	tok, err := b.leased(d)
	if err != nil {
		return err
	}
	start := time.Now() // the broker restarts its lease after this
	if err := b.ack(ctx, tok.msg, "+WPI"); err != nil {
		return err
	}
	b.mu.Lock()
	ackWait := b.lease
	b.mu.Unlock()
	tok.mu.Lock()
	tok.leaseEnd = localLeaseEnd(start, min(lease, ackWait))
	tok.mu.Unlock()
	return nil
}

// Ack implements queue.Backend: the broker removes the job, and confirms it, before Ack returns.
func (b *Backend) Ack(ctx context.Context, d *queue.Delivery) error {
	tok, err := b.leased(d)
	if err != nil {
		return err
	}
	if err := tok.msg.DoubleAck(ctx); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("jetstream: ack %s: %w", d.ID, err)
	}
	if len(tok.st.History) > 0 || tok.st.Skips > 0 {
		return b.dropState(ctx, d.ID)
	}
	return nil
}

// Nack implements queue.Backend: the attempt is added to the job's state, then the broker
// redelivers the job after delay (NakWithDelay).
func (b *Backend) Nack(ctx context.Context, d *queue.Delivery, delay time.Duration, a queue.Attempt) error {
	tok, err := b.leased(d)
	if err != nil {
		return err
	}
	tok.st.History = fillHistory(tok.st.History, d.Attempt)
	tok.st.History = append(tok.st.History, a)
	if err := b.saveState(ctx, d.ID, tok.st); err != nil {
		return err
	}
	kind := markReady
	if delay > 0 {
		kind = markDelayed
	}
	if err := b.remark(ctx, tok, d.ID, kind); err != nil {
		return err
	}
	return b.ack(ctx, tok.msg, nakDelay(delay))
}

// fillHistory adds an entry for each attempt before attempt that left none: its lease expired
// (its process may have died).
func fillHistory(h []queue.Attempt, attempt int) []queue.Attempt {
	have := make(map[int]bool, len(h))
	for _, a := range h {
		have[a.Number] = true
	}
	for n := 1; n < attempt; n++ {
		if !have[n] {
			h = append(h, queue.Attempt{Number: n, Error: queue.ErrLeaseExpired.Error()})
		}
	}
	if len(h) > 1 {
		slices.SortStableFunc(h, func(a, b queue.Attempt) int { return cmp.Compare(a.Number, b.Number) })
	}
	return h
}

// Release implements queue.Backend: the delivery is recorded as not an attempt and the job is
// ready again at once.
func (b *Backend) Release(ctx context.Context, d *queue.Delivery) error {
	tok, err := b.leased(d)
	if err != nil {
		return err
	}
	tok.st.Released = true
	return b.skip(ctx, d, 0, markReady)
}

// Bury implements queue.Backend: the job is published to the dead-letter stream with its
// reason and attempt history, and only then terminated, so that a crash in between leaves a
// duplicate dead letter at worst (deduplicated by the broker for ten minutes), never a lost job.
func (b *Backend) Bury(ctx context.Context, d *queue.Delivery, reason queue.Reason, a queue.Attempt) error {
	if _, err := b.leased(d); err != nil {
		return err
	}
	return b.bury(ctx, d, reason, a)
}

func (b *Backend) bury(ctx context.Context, d *queue.Delivery, reason queue.Reason, a queue.Attempt) error {
	tok, err := b.token(d)
	if err != nil {
		return err
	}
	hist := fillHistory(append([]queue.Attempt(nil), tok.st.History...), d.Attempt)
	hist = append(hist, a)
	hj, err := json.Marshal(hist)
	if err != nil {
		return err
	}
	h := jobHeader(&d.Message)
	h.Set(hdrReason, string(reason))
	h.Set(hdrAttempt, strconv.Itoa(d.Attempt))
	h.Set(hdrHistory, string(hj))
	putTime(h, hdrDeadAt, time.Now())
	msg := &nats.Msg{Subject: b.deadPrefix + token(d.ID), Header: h, Data: d.Body}
	// The same job buried twice (a crash before Term) is one dead letter.
	msgID := d.ID + "\x00dead\x00" + strconv.FormatUint(d.Seq, 10)
	if _, err := b.js.PublishMsg(ctx, msg, natsjs.WithMsgID(msgID)); err != nil {
		return fmt.Errorf("jetstream: dead-letter %s: %w", d.ID, err)
	}
	if err := b.ack(ctx, tok.msg, "+TERM"); err != nil {
		return err
	}
	if len(tok.st.History) > 0 || tok.st.Skips > 0 {
		return b.dropState(ctx, d.ID)
	}
	return nil
}

// deadFrom decodes a dead-letter message.
func deadFrom(raw *natsjs.RawStreamMsg) (queue.DeadMessage, error) {
	dm := queue.DeadMessage{Message: messageFrom(raw.Header, raw.Data)}
	dm.Reason = queue.Reason(raw.Header.Get(hdrReason))
	dm.Attempt, _ = strconv.Atoi(raw.Header.Get(hdrAttempt))
	dm.At = getTime(raw.Header, hdrDeadAt)
	if h := raw.Header.Get(hdrHistory); h != "" {
		if err := json.Unmarshal([]byte(h), &dm.History); err != nil {
			return dm, fmt.Errorf("jetstream: dead letter %s: history: %w", dm.ID, err)
		}
	}
	return dm, nil
}

// DeadLetters implements queue.Backend: it reads the dead-letter stream in order, one request
// per dead letter.
func (b *Backend) DeadLetters(ctx context.Context) iter.Seq2[queue.DeadMessage, error] {
	return func(yield func(queue.DeadMessage, error) bool) {
		if err := b.opened0(); err != nil {
			yield(queue.DeadMessage{}, err)
			return
		}
		for seq := uint64(1); ; {
			raw, err := b.dead.GetMsg(ctx, seq, natsjs.WithGetMsgSubject(b.deadPrefix+">"))
			if errors.Is(err, natsjs.ErrMsgNotFound) {
				return
			}
			if err != nil {
				if ctx.Err() != nil {
					err = context.Cause(ctx)
				}
				yield(queue.DeadMessage{}, err)
				return
			}
			seq = raw.Sequence + 1
			dm, err := deadFrom(raw)
			if !yield(dm, err) {
				return
			}
		}
	}
}

// Redrive implements queue.Backend: it publishes the newest dead letter with id as a new job
// (fresh attempts, no delay) and then deletes every dead letter with id.
func (b *Backend) Redrive(ctx context.Context, id string) error {
	if err := b.opened0(); err != nil {
		return err
	}
	raw, err := b.dead.GetLastMsgForSubject(ctx, b.deadPrefix+token(id))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return queue.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("jetstream: redrive %s: %w", id, err)
	}
	m := messageFrom(raw.Header, raw.Data)
	m.EnqueuedAt, m.NotBefore, m.StartBy = time.Now(), time.Time{}, time.Time{}
	msg := &nats.Msg{Subject: b.jobSubject(m.Key, m.ID), Header: jobHeader(&m), Data: m.Body}
	// Redriving the same dead letter twice (a crash before it is deleted) makes one job.
	msgID := id + "\x00redrive\x00" + strconv.FormatUint(raw.Sequence, 10)
	_, err = b.js.PublishMsg(ctx, msg, natsjs.WithExpectLastSequencePerSubject(0), natsjs.WithMsgID(msgID))
	switch apiCode(err) {
	case 0:
		if err != nil {
			return fmt.Errorf("jetstream: redrive %s: %w", id, err)
		}
	case codeWrongLast, codeWrongLR:
		return queue.ErrDuplicate
	case codeFull:
		return queue.ErrFull
	default:
		return fmt.Errorf("jetstream: redrive %s: %w", id, err)
	}
	return b.purgeDead(ctx, id)
}

func (b *Backend) purgeDead(ctx context.Context, id string) error {
	if err := b.dead.Purge(ctx, natsjs.WithPurgeSubject(b.deadPrefix+token(id))); err != nil {
		return fmt.Errorf("jetstream: purge %s: %w", id, err)
	}
	return nil
}

// Purge implements queue.Backend.
func (b *Backend) Purge(ctx context.Context, id string) error {
	if err := b.opened0(); err != nil {
		return err
	}
	_, err := b.dead.GetLastMsgForSubject(ctx, b.deadPrefix+token(id))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return queue.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("jetstream: purge %s: %w", id, err)
	}
	return b.purgeDead(ctx, id)
}

// Stats implements queue.Backend from stream and consumer info and the markers of delayed and
// handed-back jobs: InFlight is the consumer's ack pending count less the jobs handed back and
// the jobs prefetched by this process (jobs prefetched by other processes count as in flight),
// Delayed counts jobs whose start time or retry delay has not come, Dead the dead-letter
// stream's size and Oldest the time the oldest stored job was published.
func (b *Backend) Stats(ctx context.Context) (queue.BackendStats, error) {
	var s queue.BackendStats
	if err := b.opened0(); err != nil {
		return s, err
	}
	b.statsMu.Lock()
	defer b.statsMu.Unlock()
	wi, err := b.statWork.Info(ctx)
	if err != nil {
		return s, fmt.Errorf("jetstream: stats: %w", err)
	}
	ci, err := b.statCons.Info(ctx)
	if err != nil {
		return s, fmt.Errorf("jetstream: stats: %w", err)
	}
	if removed, err := b.removeAcked(ctx, wi, ci); err != nil {
		return s, fmt.Errorf("jetstream: stats: %w", err)
	} else if removed {
		if wi, err = b.statWork.Info(ctx); err != nil {
			return s, fmt.Errorf("jetstream: stats: %w", err)
		}
	}
	di, err := b.statDead.Info(ctx)
	if err != nil {
		return s, fmt.Errorf("jetstream: stats: %w", err)
	}
	si, err := b.statState.Info(ctx, natsjs.WithSubjectFilter(b.markPrefix+">"))
	if err != nil {
		return s, fmt.Errorf("jetstream: stats: %w", err)
	}
	var marks [3]int
	for subj := range si.State.Subjects {
		kind, _, _ := strings.Cut(strings.TrimPrefix(subj, b.markPrefix), ".")
		switch kind {
		case markWaiting:
			marks[0]++
		case markDelayed:
			marks[1]++
		case markReady:
			marks[2]++
		}
	}
	stored := int(wi.State.Msgs)
	s.Delayed = min(marks[0]+marks[1], stored)
	s.InFlight = max(ci.NumAckPending-marks[1]-marks[2]-int(b.bufFresh.Load()), 0)
	s.InFlight = min(s.InFlight, stored-s.Delayed)
	s.Ready = stored - s.Delayed - s.InFlight
	s.Dead = int(di.State.Msgs)
	if stored > 0 {
		s.Oldest = wi.State.FirstTime
	}
	return s, nil
}

// removeAcked deletes the jobs at or below the consumer's ack floor. Every one of them was
// acked, so a work-queue stream should not hold it, but a server restart can leave one behind
// (the ack persisted, the removal not), and the consumer never delivers it again. b.statsMu
// held.
func (b *Backend) removeAcked(ctx context.Context, wi *natsjs.StreamInfo, ci *natsjs.ConsumerInfo) (bool, error) {
	if wi.State.Msgs == 0 || ci.AckFloor.Stream < wi.State.FirstSeq {
		return false, nil
	}
	if err := b.statWork.Purge(ctx, natsjs.WithPurgeSequence(ci.AckFloor.Stream+1)); err != nil {
		return false, fmt.Errorf("remove acked jobs: %w", err)
	}
	return true, nil
}

// Delete deletes the queue from the servers: its streams, with every job, dead letter and
// retry state in them. Every Backend of the queue, in every process, must be closed first.
func (b *Backend) Delete(ctx context.Context) error {
	for _, name := range []string{b.workStream, b.deadStream, b.stateStream} {
		if err := b.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, natsjs.ErrStreamNotFound) {
			return fmt.Errorf("jetstream: delete stream %s: %w", name, err)
		}
	}
	return nil
}

// Close stops receiving: jobs prefetched but not handed to a worker go back to the broker. It
// does not delete anything and does not close the NATS connection. Close is idempotent.
func (b *Backend) Close() error {
	b.mu.Lock()
	b.closed = true
	p := b.pump
	b.pump = nil
	b.mu.Unlock()
	if p != nil {
		b.stopPump(p)
	}
	return nil
}
