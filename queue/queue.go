package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Queue is a typed job queue on a Backend. Producers call Enqueue; a
// [Consumer] started with Consume handles the jobs. A Queue outlives its
// consumers: Close a consumer and Consume again to resume where it stopped.
//
// A Queue is safe for concurrent use. It starts no goroutine of its own.
type Queue[T any] struct {
	backend Backend
	values  bool // backend keeps payload values: no codec
	codec   Codec[T]
	hooks   Hooks
	maxWait time.Duration

	idPrefix string // 16 random hex digits
	clk      clock

	// Written by the producers on every job: kept off the cache lines of
	// the fields above, which the consumers read on every job.
	_     [64]byte
	idSeq atomic.Uint64
	ids   atomic.Pointer[idBlock]
	c     counters
}

// counters are the queue's cumulative counts (this process's view). The
// producers' counts and the consumers' counts sit on separate cache lines,
// so that a producer and a worker counting at once do not contend.
type counters struct {
	enqueued, duplicates, rejected, dropped atomic.Uint64
	_                                       [64]byte
	acked, retried, backendErrors           atomic.Uint64
	dead                                    [numReasons]atomic.Uint64
}

// reasons lists the dead-letter reasons; counters.dead counts each at its
// index here.
var reasons = [...]Reason{ReasonAttempts, ReasonPermanent, ReasonPanic, ReasonOverflow, ReasonExpired}

const numReasons = len(reasons)

func reasonIndex(r Reason) int {
	for i, x := range reasons {
		if x == r {
			return i
		}
	}
	return 0
}

// Option configures a Queue in New.
type Option interface{ apply(*options) }

type options struct {
	backend Backend
	cfg     Config
	hooks   Hooks
	maxWait time.Duration
	codec   any
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithBackend stores the jobs in b instead of a new [Memory].
func WithBackend(b Backend) Option { return optionFunc(func(o *options) { o.backend = b }) }

// WithCapacity bounds the number of stored jobs (ready, delayed and in
// flight; dead letters are not counted). The default, 0, is unbounded.
func WithCapacity(n int) Option { return optionFunc(func(o *options) { o.cfg.Capacity = n }) }

// WithOverflow sets what Enqueue does at capacity. The default is [Block].
func WithOverflow(p Overflow) Option { return optionFunc(func(o *options) { o.cfg.Overflow = p }) }

// WithDedupHorizon keeps a job's ID taken for d after its enqueue, even
// once the job was acked or dead-lettered: enqueueing it again within d
// returns ErrDuplicate. Without it (d = 0) an ID is taken only while its job
// is stored.
func WithDedupHorizon(d time.Duration) Option {
	return optionFunc(func(o *options) { o.cfg.DedupHorizon = d })
}

// WithMaxWait gives every job a start-by deadline d after its enqueue (or
// after its NotBefore, if later) unless Enqueue sets one with [StartBy]. A
// job not started by then is dead-lettered with [ReasonExpired].
func WithMaxWait(d time.Duration) Option { return optionFunc(func(o *options) { o.maxWait = d }) }

// WithHooks sets functions called on job events (see [Hooks]).
func WithHooks(h Hooks) Option { return optionFunc(func(o *options) { o.hooks = h }) }

// WithCodec sets how payloads are encoded for backends that store bytes.
// The default codec passes []byte and string payloads through as bytes and
// encodes everything else as JSON. The in-memory backend does not encode.
func WithCodec[T any](c Codec[T]) Option { return optionFunc(func(o *options) { o.codec = c }) }

// Hooks are optional functions called on job events, to wire logging,
// metrics or tracing. They run synchronously on the goroutine where the
// event happens (the producer's or a worker's), may run concurrently with
// each other, and must not block. A nil hook is skipped.
//
// A hook that panics on a consumer's worker (OnStart, OnSuccess, OnRetry,
// OnDead) does not change what happens to the job; the panic is recovered
// and re-raised by [Consumer.Close]. OnEnqueue and OnDrop run in the
// producer's goroutine: their panics propagate out of Enqueue.
type Hooks struct {
	// OnEnqueue is called after a job was stored.
	OnEnqueue func(Event)
	// OnStart is called before the handler runs.
	OnStart func(Event)
	// OnSuccess is called after the job was acked.
	OnSuccess func(Event)
	// OnRetry is called after a failed job was scheduled again, with
	// the error and the delay.
	OnRetry func(Event)
	// OnDead is called after a job was dead-lettered, with the reason
	// (this includes jobs evicted by DropOldest, with ReasonOverflow).
	OnDead func(Event)
	// OnDrop is called when DropNewest refused a job at capacity, with
	// Err ErrDropped.
	OnDrop func(Event)
}

// Event describes a job event for a hook.
type Event struct {
	ID      string
	Key     string
	Attempt int
	// Err is the handler's error (OnRetry, OnDead), if any.
	Err error
	// Delay is the redelivery delay (OnRetry).
	Delay time.Duration
	// Reason is why the job was dead-lettered (OnDead).
	Reason Reason
}

// New returns a queue of jobs with payload T. Without [WithBackend] the
// jobs are kept in memory by a new [Memory].
func New[T any](opts ...Option) (*Queue[T], error) {
	var o options
	for _, opt := range opts {
		opt.apply(&o)
	}
	if err := o.cfg.Validate(); err != nil {
		return nil, err
	}
	if o.maxWait < 0 {
		return nil, fmt.Errorf("queue: negative max wait %v", o.maxWait)
	}
	if o.backend == nil {
		o.backend = NewMemory()
	}
	q := &Queue[T]{backend: o.backend, hooks: o.hooks, maxWait: o.maxWait}
	if _, ok := o.backend.(interface{ carriesValues() }); ok {
		q.values = true
	}
	switch c := o.codec.(type) {
	case nil:
		q.codec = defaultCodec[T]{}
	case Codec[T]:
		q.codec = c
	default:
		return nil, fmt.Errorf("queue: codec %T is not a Codec for %T", c, *new(T))
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	q.idPrefix = hex.EncodeToString(b[:])
	if err := o.backend.Open(context.Background(), o.cfg); err != nil {
		return nil, err
	}
	return q, nil
}

// EnqueueOption sets a property of one job in Enqueue.
type EnqueueOption interface{ applyJob(*Message) }

type idOption string

func (o idOption) applyJob(m *Message) { m.ID = string(o) }

// WithID sets the job's ID, its deduplication key. Without it, Enqueue
// generates a unique ID. An ID this queue generated may be given again (to
// enqueue a job again under its ID); one that it has not generated yet, but
// would, is refused, so that a generated ID is never taken.
func WithID(id string) EnqueueOption { return idOption(id) }

type keyOption string

func (o keyOption) applyJob(m *Message) { m.Key = string(o) }

// WithKey sets the job's ordering key: jobs with the same key are handled
// one at a time in enqueue order, retries included.
func WithKey(key string) EnqueueOption { return keyOption(key) }

type notBeforeOption time.Time

func (o notBeforeOption) applyJob(m *Message) { m.NotBefore = time.Time(o) }

// NotBefore delays the job's first delivery until t.
func NotBefore(t time.Time) EnqueueOption { return notBeforeOption(t) }

type delayOption time.Duration

func (o delayOption) applyJob(m *Message) {
	if o > 0 {
		m.NotBefore = time.Now().Add(time.Duration(o))
	}
}

// WithDelay delays the job's first delivery by d from now.
func WithDelay(d time.Duration) EnqueueOption { return delayOption(d) }

type startByOption time.Time

func (o startByOption) applyJob(m *Message) { m.StartBy = time.Time(o) }

// StartBy sets the job's start-by deadline: if it is first delivered after
// t it is dead-lettered with [ReasonExpired] instead of handled.
func StartBy(t time.Time) EnqueueOption { return startByOption(t) }

// Enqueue stores a job with payload and returns its ID.
//
// It returns ErrDuplicate (and the ID) if the ID is taken; under the
// overflow policies at capacity: Block waits for room or ctx, Reject returns
// ErrFull, DropNewest returns ErrDropped, and DropOldest dead-letters the
// oldest waiting job to make room. The payload must not be mutated after
// Enqueue (see [Job]).
func (q *Queue[T]) Enqueue(ctx context.Context, payload T, opts ...EnqueueOption) (string, error) {
	var m Message
	if len(opts) > 0 {
		// Options get a pointer through an interface, which escapes: give
		// them a copy only when there are any.
		mp := new(Message)
		for _, o := range opts {
			o.applyJob(mp)
		}
		m = *mp
		if q.ahead(m.ID) {
			return m.ID, fmt.Errorf("queue: job ID %s is one this queue has yet to generate", m.ID)
		}
	}
	m.EnqueuedAt = q.clk.now()
	if m.ID == "" {
		m.ID = q.newID()
		m.fresh = true
	}
	if m.StartBy.IsZero() && q.maxWait > 0 {
		from := m.EnqueuedAt
		if m.NotBefore.After(from) {
			from = m.NotBefore
		}
		m.StartBy = from.Add(q.maxWait)
	}
	if q.values {
		m.Value = payload
	} else {
		b, err := q.codec.Marshal(payload)
		if err != nil {
			return m.ID, fmt.Errorf("queue: encode payload: %w", err)
		}
		m.Body = b
	}
	res, err := q.backend.Enqueue(ctx, m)
	for _, id := range res.Evicted {
		q.c.dead[reasonIndex(ReasonOverflow)].Add(1)
		if h := q.hooks.OnDead; h != nil {
			h(Event{ID: id, Reason: ReasonOverflow, Err: errEvicted})
		}
	}
	switch {
	case err == nil:
		q.c.enqueued.Add(1)
		if h := q.hooks.OnEnqueue; h != nil {
			h(Event{ID: m.ID, Key: m.Key})
		}
	case errors.Is(err, ErrDuplicate):
		q.c.duplicates.Add(1)
	case errors.Is(err, ErrFull):
		q.c.rejected.Add(1)
	case errors.Is(err, ErrDropped):
		q.c.dropped.Add(1)
		if h := q.hooks.OnDrop; h != nil {
			h(Event{ID: m.ID, Key: m.Key, Err: err})
		}
	}
	return m.ID, err
}

var errEvicted = errors.New("queue: evicted by overflow (drop oldest)")

// Generated IDs are 32 hex digits: the queue's random prefix and a counter.
// They are cut from chunks of idChunk IDs built at once, so that generating
// an ID allocates once per chunk, not once per job.
const (
	idLen   = 32
	idChunk = 256
)

type idBlock struct {
	first uint64 // counter of the first ID in s
	s     string // idChunk IDs of idLen bytes
}

func (q *Queue[T]) newID() string {
	n := q.idSeq.Add(1) - 1
	b := q.ids.Load()
	if b == nil || n < b.first || n >= b.first+idChunk {
		b = q.idBlock(n - n%idChunk)
		q.ids.Store(b) // a racing store of another block is harmless
	}
	off := int(n-b.first) * idLen
	return b.s[off : off+idLen]
}

// ahead reports whether id is an ID the queue has not generated yet but
// would: its prefix and a counter not yet reached.
func (q *Queue[T]) ahead(id string) bool {
	if len(id) != idLen || id[:len(q.idPrefix)] != q.idPrefix {
		return false
	}
	digits := id[len(q.idPrefix):]
	if strings.ContainsAny(digits, "ABCDEF") { // newID writes lower case
		return false
	}
	n, err := strconv.ParseUint(digits, 16, 64)
	return err == nil && n >= q.idSeq.Load()
}

// idBlock builds the chunk of IDs from first, a multiple of idChunk: the
// IDs differ only in their last two hex digits, so the first one is written
// out and the others are copies with those digits changed.
func (q *Queue[T]) idBlock(first uint64) *idBlock {
	const digits = "0123456789abcdef"
	b := make([]byte, idChunk*idLen)
	id := b[:idLen]
	copy(id, q.idPrefix)
	for i, shift := len(q.idPrefix), 60; shift >= 0; i, shift = i+1, shift-4 {
		id[i] = digits[(first>>uint(shift))&0xf]
	}
	for i := range idChunk {
		n := first + uint64(i)
		id := b[i*idLen : (i+1)*idLen]
		copy(id, b[:idLen-2])
		id[idLen-2] = digits[(n>>4)&0xf]
		id[idLen-1] = digits[n&0xf]
	}
	return &idBlock{first: first, s: string(b)}
}

// decode returns the payload of m.
func (q *Queue[T]) decode(m *Message) (T, error) {
	if q.values {
		v, ok := m.Value.(T)
		if !ok && m.Value != nil {
			var zero T
			return zero, fmt.Errorf("queue: payload is %T, want %T", m.Value, zero)
		}
		return v, nil
	}
	return q.unmarshal(m.Body)
}

// unmarshal decodes data with the codec, and returns a panic of the codec
// as an error: a payload that makes the codec panic fails to decode like any
// bad payload, and its job is dead-lettered (see worker.handle), instead of
// the panic taking down the worker that holds the job, over and over at
// each redelivery.
func (q *Queue[T]) unmarshal(data []byte) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("queue: codec panicked decoding the payload: %v\n%s", r, debug.Stack())
		}
	}()
	return q.codec.Unmarshal(data)
}

func (q *Queue[T]) job(m *Message) (Job[T], error) {
	p, err := q.decode(m)
	return Job[T]{
		ID: m.ID, Payload: p, Key: m.Key, NotBefore: m.NotBefore, StartBy: m.StartBy,
		Attempt: m.Attempt, EnqueuedAt: m.EnqueuedAt,
	}, err
}

// DeadLetters lists the dead letters, oldest first. An ID has at most one
// dead letter: when a job dies whose ID already has one (a later job reused
// the ID), the newer dead letter replaces the older, so [Queue.Redrive] and
// [Queue.Purge] always name one job. A backend error ends
// the listing with a non-nil error; a payload that cannot be decoded is
// yielded with its error and a zero payload.
func (q *Queue[T]) DeadLetters(ctx context.Context) iter.Seq2[DeadLetter[T], error] {
	return func(yield func(DeadLetter[T], error) bool) {
		for dm, err := range q.backend.DeadLetters(ctx) {
			if err != nil {
				yield(DeadLetter[T]{}, err)
				return
			}
			j, err := q.job(&dm.Message)
			if !yield(DeadLetter[T]{Job: j, Reason: dm.Reason, History: dm.History, At: dm.At}, err) {
				return
			}
		}
	}
}

// Redrive puts the dead letter with id back into the queue as a new job
// with a fresh attempt count. It returns ErrNotFound if there is no such
// dead letter.
func (q *Queue[T]) Redrive(ctx context.Context, id string) error {
	err := q.backend.Redrive(ctx, id)
	if err == nil {
		q.c.enqueued.Add(1)
		if h := q.hooks.OnEnqueue; h != nil {
			h(Event{ID: id})
		}
	}
	return err
}

// Purge deletes the dead letter with id. It returns ErrNotFound if there is
// no such dead letter.
func (q *Queue[T]) Purge(ctx context.Context, id string) error {
	return q.backend.Purge(ctx, id)
}

// Stats is a snapshot of a queue: the backend's gauges and this process's
// counters since New.
type Stats struct {
	// Ready is the depth: jobs waiting to be handled now (including jobs
	// queued behind a busy ordering key). InFlight counts jobs being
	// handled, Delayed jobs waiting for their delay or retry backoff, Dead
	// the dead letters. Ready+InFlight+Delayed is what the backend stores.
	Ready, InFlight, Delayed, Dead int
	// Lag is the age of the oldest stored job (0 if none).
	Lag time.Duration

	// Enqueued counts accepted jobs (redriven ones included).
	Enqueued uint64
	// Duplicates, Rejected and Dropped count Enqueue calls that returned
	// ErrDuplicate, ErrFull and ErrDropped.
	Duplicates, Rejected, Dropped uint64
	// Acked counts jobs handled successfully.
	Acked uint64
	// Retried counts failed attempts scheduled for redelivery.
	Retried uint64
	// DeadLettered counts jobs dead-lettered, by reason.
	DeadLettered map[Reason]uint64
	// BackendErrors counts the backend calls of this process's consumers
	// that failed, other than by the consumer's own shutdown: a receive
	// (retried after a backoff), a lease renewal, or the settling of a job
	// (ack, retry, release or dead letter), whose job the backend then
	// redelivers when its lease ends. A growing count is a backend in
	// trouble, or leases too short for the handlers.
	BackendErrors uint64
}

// DeadLetteredTotal returns the number of jobs dead-lettered, all reasons
// together: the sum of s.DeadLettered.
func (s Stats) DeadLetteredTotal() uint64 {
	var n uint64
	for _, v := range s.DeadLettered {
		n += v
	}
	return n
}

// Stats returns a snapshot of the queue.
func (q *Queue[T]) Stats(ctx context.Context) (Stats, error) {
	bs, err := q.backend.Stats(ctx)
	if err != nil {
		return Stats{}, err
	}
	s := Stats{
		Ready: bs.Ready, InFlight: bs.InFlight, Delayed: bs.Delayed, Dead: bs.Dead,
		Enqueued:      q.c.enqueued.Load(),
		Duplicates:    q.c.duplicates.Load(),
		Rejected:      q.c.rejected.Load(),
		Dropped:       q.c.dropped.Load(),
		Acked:         q.c.acked.Load(),
		Retried:       q.c.retried.Load(),
		BackendErrors: q.c.backendErrors.Load(),
		DeadLettered:  make(map[Reason]uint64, numReasons),
	}
	for i, r := range reasons {
		s.DeadLettered[r] = q.c.dead[i].Load()
	}
	if !bs.Oldest.IsZero() {
		s.Lag = time.Since(bs.Oldest)
	}
	return s, nil
}

// defaultCodec passes []byte and string through and uses JSON otherwise.
type defaultCodec[T any] struct{}

func (defaultCodec[T]) Marshal(v T) ([]byte, error) {
	switch p := any(v).(type) {
	case []byte:
		return append([]byte(nil), p...), nil
	case string:
		return []byte(p), nil
	}
	return json.Marshal(v)
}

func (defaultCodec[T]) Unmarshal(data []byte) (T, error) {
	var v T
	switch p := any(&v).(type) {
	case *[]byte:
		*p = append([]byte(nil), data...)
		return v, nil
	case *string:
		*p = string(data)
		return v, nil
	}
	err := json.Unmarshal(data, &v)
	return v, err
}
