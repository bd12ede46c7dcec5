package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/clock"
	"github.com/corral-go/corral/internal/panics"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/health"
	"github.com/corral-go/corral/queue/internal/jobid"
	"github.com/corral-go/corral/queue/internal/stats"
	"github.com/corral-go/corral/queue/internal/storable"
	"github.com/corral-go/corral/queue/internal/version"
	"github.com/corral-go/corral/queue/memory"
)

// Queue is a typed job queue on a Backend. Producers call Enqueue; a
// [Consumer] started with Consume handles the jobs. A Queue outlives its
// consumers: Close a consumer and Consume again to resume where it stopped.
// Close the Queue when done with it: that closes its consumers and its
// backend.
//
// A Queue is safe for concurrent use. It starts no goroutine of its own.
// Make one with [New]: the methods of a zero Queue panic.
type Queue[T any] struct {
	backend driver.Backend
	fast    driver.InProcess // the backend, if it is one of its own (see New)
	values  bool             // fast != nil: payloads cross as values, no codec
	codec   Codec[T]
	vers    version.Set[T] // set once by New
	hooks   Hooks
	maxWait time.Duration
	closed  atomic.Bool // set once by Close, never reset

	clk clock.Anchored
	// timed: the consumers time every handler run (WithTimings, or a hook
	// that gets Event.Duration), from epoch, into lat; otherwise a sample.
	timed bool
	epoch clock.Epoch
	// labels carries the pprof label queue=name (WithName), or is nil.
	labels context.Context

	hl       health.Tracker
	onHealth func(context.Context, Health) // q.healthChanged, bound once
	onLoss   func(context.Context, Health) // OnHealth, for a loss, after WithLogger's record of it
	losses   driver.LossCounter            // the backend, if it counts losses (see lossesGrew)
	lossSeen atomic.Uint64                 // the backend's Losses as the hook last learned it

	mu        sync.Mutex                // guards consumers and periodics
	consumers map[*Consumer[T]]struct{} // not closed yet
	periodics map[*Periodic]struct{}    // running (see Periodic)
	horizon   time.Duration             // the dedup horizon (WithDedupHorizon)

	// Written by the producers on every job: kept off the cache lines of
	// the fields above, which the consumers read on every job.
	_   [64]byte
	ids jobid.Generator
	c   stats.Counters
	lat stats.Shards
}

// New returns a queue of jobs with payload T, with its backend opened:
// ctx bounds the Open (a broker backend's requests to create or check its
// streams). Without [WithBackend] the jobs are kept in memory by a new
// memory.Backend. An error is the backend's: it could not be opened (a broker out
// of reach, settings that differ from the queue's). A nil ctx or option
// panics, as do options with impossible settings (see [Option]).
func New[T any](ctx context.Context, opts ...Option) (*Queue[T], error) {
	if ctx == nil {
		panic("queue: New with a nil context")
	}
	var o options
	for _, opt := range opts {
		if opt == nil {
			panic("queue: nil option")
		}
		opt.apply(&o)
	}
	if o.backend == nil {
		o.backend = memory.New()
	}
	q := &Queue[T]{backend: o.backend, hooks: o.hooks, maxWait: o.maxWait, codec: codecFor[T](&o),
		consumers: make(map[*Consumer[T]]struct{}), horizon: o.cfg.DedupHorizon}
	q.vers.Init(o.version, cmp.Or(o.versionWait, DefaultVersionWait), o.upgrades)
	q.timed = o.timed || o.hooks.OnSuccess != nil || o.hooks.OnRetry != nil || o.hooks.OnDead != nil
	q.hooks, q.onLoss = o.logHooks() // after timed: logging does not time handler runs
	if o.name != "" {
		q.labels = pprof.WithLabels(context.Background(), pprof.Labels("queue", o.name))
	}
	q.epoch = clock.Start()
	q.onHealth = q.healthChanged
	q.hl.Init(time.Now())
	// The backend's fast paths, looked for once: only a backend whose
	// InProcess methods are its own (see driver.InProcess.Self).
	if ip, ok := o.backend.(driver.InProcess); ok && ip.Self() == o.backend {
		q.fast, q.values = ip, true
	}
	q.losses, _ = o.backend.(driver.LossCounter)
	q.ids.Init()
	if err := o.backend.Open(ctx, o.cfg); err != nil {
		return nil, err
	}
	if q.losses != nil {
		q.lossSeen.Store(q.losses.Losses()) // the hook reports the losses found from now on
	}
	return q, nil
}

// zeroQueue is the panic of a method of a zero Queue.
const zeroQueue = "queue: zero Queue: use queue.New"

// Close closes the queue: it stops its periodic jobs ([Queue.Periodic],
// each once its enqueue in progress, if any, is done), then it closes every
// consumer of the queue not closed yet (as [Consumer.Close] does, all at once, with ctx: it does not drain
// them, see [Consumer.Drain]), then the backend ([driver.Backend.Close]), which the
// queue owns. It returns the consumers' and the backend's errors, joined
// (context.Cause(ctx) if ctx ended first). The consumers' reports are not
// returned: close a consumer yourself first to read its report.
//
// What the backend stores survives as the backend keeps it: with the
// in-memory backend, nothing outlives the process; with a broker backend, every
// stored job and dead letter stays on the broker for the next process.
//
// After Close, Enqueue, Consume, Redrive, Purge, Stats and DeadLetters fail
// with ErrClosed; a call running when Close is called may too. Health still
// answers. Close is idempotent: later calls return ErrClosed. If a
// consumer's Close panics (a hook's or the backend's panic, see
// [Consumer.Close]), Close still closes the others and the backend, then
// panics with the first such panic.
func (q *Queue[T]) Close(ctx context.Context) error {
	if q.backend == nil {
		panic(zeroQueue)
	}
	q.mu.Lock()
	if q.closed.Load() {
		q.mu.Unlock()
		return ErrClosed
	}
	q.closed.Store(true) // under mu: Consume registers no consumer after this
	cs := make([]*Consumer[T], 0, len(q.consumers))
	for c := range q.consumers {
		cs = append(cs, c)
	}
	ps := make([]*Periodic, 0, len(q.periodics))
	for p := range q.periodics {
		ps = append(ps, p)
	}
	q.mu.Unlock()
	for _, p := range ps {
		p.Stop()
	}

	errs := make([]error, len(cs)+1)
	panicked := make([]any, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			var catch panics.Catcher
			defer func() {
				if catch.Panic != nil {
					panicked[i] = catch.Panic.Value
				}
			}()
			defer catch.Recover()
			if _, err := c.Close(ctx); !errors.Is(err, ErrClosed) {
				errs[i] = err // ErrClosed: its owner closed it meanwhile
			}
			catch.Returned()
		})
	}
	wg.Wait()
	errs[len(cs)] = q.backend.Close(ctx)
	for _, p := range panicked {
		if p != nil {
			panic(p)
		}
	}
	return errors.Join(errs...)
}

// forget takes c off the queue's consumers, once it is closed.
func (q *Queue[T]) forget(c *Consumer[T]) {
	q.mu.Lock()
	delete(q.consumers, c)
	q.mu.Unlock()
}

// Enqueue stores a job with payload and returns its ID.
//
// It returns ErrDuplicate (and the ID) if the ID is taken; under the
// overflow policies at capacity: Block waits for room or ctx, Reject returns
// ErrFull, DropNewest returns ErrDropped, and DropOldest dead-letters the
// oldest waiting job to make room. The payload must not be mutated after
// Enqueue (see [Job]). An ID, ordering key or headers that some backend
// cannot store (see [WithID], [WithKey] and [WithHeaders]) are refused
// before the backend is called.
//
// With a broker backend, an error matching [ErrUnavailable] means the
// broker could not be reached or did not answer in time: the job may have
// been stored. Enqueue again with the same ID (give one with [WithID]);
// ErrDuplicate then means it was. The in-memory backend never returns it.
//
// A job refused because another job holds its unique key ([WithUnique])
// is not stored: Enqueue returns that job's ID, and ErrNotUnique.
func (q *Queue[T]) Enqueue(ctx context.Context, payload T, opts ...EnqueueOption) (string, error) {
	switch {
	case q.backend == nil:
		panic(zeroQueue)
	case ctx == nil:
		panic("queue: Enqueue with a nil context")
	case q.closed.Load():
		return "", ErrClosed
	}
	var (
		m     driver.Message
		fresh = true
		err   error
	)
	if len(opts) == 0 && q.values && q.maxWait == 0 {
		// message's work for a job with no options, a backend that keeps
		// values and no start-by deadline, written out here: every job of
		// the default queue takes this path, and a frame less on it shows
		// in BenchmarkQueueInMemory.
		m.ID, m.Version, m.EnqueuedAt, m.Value = q.ids.Next(), q.vers.Current, q.clk.Now(), payload
	} else if fresh, err = q.message(&m, payload, opts); err != nil {
		return m.ID, err
	}
	var res driver.EnqueueResult
	if fresh && q.fast != nil {
		res, err = q.fast.EnqueueFresh(ctx, m)
	} else {
		res, err = q.backend.Enqueue(ctx, m)
	}
	if !quiet(&q.hl, err) { // asked here: a call to observe costs the hot path
		q.observe(ctx, err)
	}
	if err != nil || res.Evicted != nil || res.DeadEvicted != nil || q.hooks.OnEnqueue != nil {
		return q.enqueued(ctx, &m, res, err), err
	}
	q.c.Enqueued.Add(1) // all enqueued does in this case, without a call
	return m.ID, nil
}

// Message returns the Message that Enqueue would give the backend for payload and opts,
// without storing it: its ID (generated if opts give none), key, headers, NotBefore and start-by
// deadline (the queue's [WithMaxWait] if opts give none), its enqueue time, and the payload
// encoded by the queue's [Codec] (in Value instead, for a backend that keeps values: see
// driver.InProcess), with the queue's payload version ([WithVersion]). It is for backends that store a
// job by a path of their own, such as an enqueue in the caller's database transaction: such a
// job is not counted in [Stats.Enqueued] and no hook is called for it (the transaction may
// roll back). It fails as Enqueue does before the backend is called: ErrClosed once the queue
// is closed, an ID the queue has yet to generate, an ID, key or headers that some backend
// cannot store ([WithID], [WithKey], [WithHeaders]), a payload the codec cannot encode. A nil
// option panics.
func (q *Queue[T]) Message(payload T, opts ...EnqueueOption) (driver.Message, error) {
	if q.backend == nil {
		panic(zeroQueue)
	}
	if q.closed.Load() {
		return driver.Message{}, ErrClosed
	}
	var m driver.Message
	if _, err := q.message(&m, payload, opts); err != nil {
		return m, err
	}
	return m, nil
}

// message fills m, a zero Message, with the message of a job enqueued with
// payload and opts: its ID (generated if opts give none), its enqueue time,
// its start-by deadline (from the queue's, if opts give none) and its
// payload (see encode); fresh says the queue generated the ID. It refuses
// an ID the queue has yet to generate, and a payload the codec cannot
// encode. m is the caller's, filled in place: the hot path copies the
// Message no more than it must. (The payload is put in here, not by a call
// of Enqueue's own: a call more on every job's path measured.)
func (q *Queue[T]) message(m *driver.Message, payload T, opts []EnqueueOption) (fresh bool, err error) {
	if len(opts) > 0 {
		// Options get a pointer through an interface, which escapes: give
		// them a copy only when there are any.
		mp := new(driver.Message)
		for _, o := range opts {
			if o == nil {
				panic("queue: nil option")
			}
			o.applyJob(mp)
		}
		*m = *mp
		if err := storable.Check("job ID", m.ID); err != nil {
			return false, err
		}
		if err := storable.Check("ordering key", m.Key); err != nil {
			return false, err
		}
		if err := storable.Headers(m.Headers); err != nil {
			return false, err
		}
		if err := storable.Check("unique key", m.Unique); err != nil {
			return false, err
		}
		if q.ids.Ahead(m.ID) {
			return false, fmt.Errorf("queue: job ID %s is one this queue has yet to generate", m.ID)
		}
	}
	m.EnqueuedAt = q.clk.Now()
	m.Version = q.vers.Current
	if m.ID == "" {
		m.ID = q.ids.Next()
		fresh = true
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
		return fresh, nil
	}
	return fresh, q.encode(m, payload)
}

// encode puts the encoding of payload by the codec in m.
func (q *Queue[T]) encode(m *driver.Message, payload T) error {
	b, err := q.codec.Marshal(payload)
	if err != nil {
		return fmt.Errorf("queue: encode payload: %w", err)
	}
	m.Body = b
	return nil
}

// enqueued counts the outcome of the backend's Enqueue of m (res, err),
// and calls the hooks that report it with ctx: the jobs it evicted, the
// dead letters it evicted, and the job's own fate. It returns the ID that
// Enqueue returns: m's, or the holder of its unique key (ErrNotUnique).
func (q *Queue[T]) enqueued(ctx context.Context, m *driver.Message, res driver.EnqueueResult, err error) string {
	for _, id := range res.Evicted {
		q.c.Dead(ReasonEvicted).Add(1)
		if h := q.hooks.OnDead; h != nil {
			h(ctx, Event{ID: id, Reason: ReasonEvicted, Err: errEvicted})
		}
	}
	q.deadEvicted(ctx, res.DeadEvicted, nil)
	switch {
	case err == nil:
		q.c.Enqueued.Add(1)
		if h := q.hooks.OnEnqueue; h != nil {
			h(ctx, Event{ID: m.ID, Key: m.Key})
		}
	case errors.Is(err, ErrDuplicate), errors.Is(err, ErrNotUnique):
		q.c.Duplicates.Add(1)
	case errors.Is(err, ErrFull):
		q.c.Rejected.Add(1)
	case errors.Is(err, ErrDropped):
		q.c.Dropped.Add(1)
		if h := q.hooks.OnDrop; h != nil {
			h(ctx, Event{ID: m.ID, Key: m.Key, Err: err})
		}
	}
	if res.Existing != "" {
		return res.Existing
	}
	return m.ID
}

// deadEvicted counts and reports the dead letters with ids, evicted by the
// dead-letter limit during a backend call made with ctx: by a worker of c,
// whose hooks' panics are recovered (see callHook), or by the caller's
// goroutine if c is nil.
func (q *Queue[T]) deadEvicted(ctx context.Context, ids []string, c *Consumer[T]) {
	for _, id := range ids {
		q.c.DeadEvicted.Add(1)
		if h := q.hooks.OnDeadEvicted; h != nil {
			ev := Event{ID: id, Err: errDeadEvicted}
			if c != nil {
				callHook(ctx, c, "OnDeadEvicted", h, ev)
			} else {
				h(ctx, ev)
			}
		}
	}
}

var errDeadEvicted = errors.New("queue: dead letter evicted by the dead-letter limit")

// DeadLetters lists the dead letters, oldest first. An ID has at most one
// dead letter: when a job dies whose ID already has one (a later job reused
// the ID), the newer dead letter replaces the older, so [Queue.Redrive] and
// [Queue.Purge] always name one job. A backend error ends
// the listing with a non-nil error; a payload that cannot be decoded is
// yielded with its error and a zero payload.
func (q *Queue[T]) DeadLetters(ctx context.Context) iter.Seq2[DeadLetter[T], error] {
	if q.backend == nil {
		panic(zeroQueue)
	}
	return func(yield func(DeadLetter[T], error) bool) {
		if q.closed.Load() {
			yield(DeadLetter[T]{}, ErrClosed)
			return
		}
		for dm, err := range q.backend.DeadLetters(ctx) {
			q.observe(ctx, err)
			if err != nil {
				yield(DeadLetter[T]{}, err)
				return
			}
			var j Job[T]
			err = q.job(&dm.Message, &j)
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
	if err := q.usable(); err != nil {
		return err
	}
	err := q.backend.Redrive(ctx, id)
	q.observe(ctx, err)
	if err == nil {
		q.c.Enqueued.Add(1)
		if h := q.hooks.OnEnqueue; h != nil {
			h(ctx, Event{ID: id})
		}
	}
	return err
}

// Purge deletes the dead letter with id. It returns ErrNotFound if there is
// no such dead letter.
func (q *Queue[T]) Purge(ctx context.Context, id string) error {
	if err := q.usable(); err != nil {
		return err
	}
	err := q.backend.Purge(ctx, id)
	q.observe(ctx, err)
	return err
}

// usable panics if q is a zero Queue, and returns ErrClosed once q is
// closed.
func (q *Queue[T]) usable() error {
	if q.backend == nil {
		panic(zeroQueue)
	}
	if q.closed.Load() {
		return ErrClosed
	}
	return nil
}
