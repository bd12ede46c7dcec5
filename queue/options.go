package queue

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/corral-go/corral/backoff"
	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/ratelimit"
	"github.com/corral-go/corral/queue/internal/version"
)

// Option configures a Queue in [New]. Every option is named With<Setting>;
// a later option of the same kind replaces an earlier one. An option given
// a setting no queue can honour (a negative capacity, an unknown overflow)
// panics when it is called, and a nil Option makes New panic: these are
// mistakes in the program, not conditions to handle.
type Option interface{ apply(*options) }

type options struct {
	backend driver.Backend
	cfg     driver.Config
	hooks   Hooks
	maxWait time.Duration
	codec   any
	timed   bool         // WithTimings
	name    string       // WithName
	logger  *slog.Logger // WithLogger

	version     int
	upgrades    []version.Upgrade
	versionWait time.Duration
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithBackend stores the jobs in b instead of a new in-memory backend
// (memory.New). The queue owns
// b once New has returned it: [Queue.Close] closes b, and nothing else
// should. (If New fails, b was not opened and is still the caller's.) It
// panics if b is nil.
func WithBackend(b driver.Backend) Option {
	if b == nil {
		panic("queue: WithBackend(nil): nil backend")
	}
	return optionFunc(func(o *options) { o.backend = b })
}

// WithCapacity bounds the number of stored jobs (ready, delayed and in
// flight; dead letters are not counted). The default, 0, is unbounded. It
// panics if n is negative.
func WithCapacity(n int) Option {
	if n < 0 {
		panic("queue: WithCapacity(" + strconv.Itoa(n) + "): negative capacity")
	}
	return optionFunc(func(o *options) { o.cfg.Capacity = n })
}

// Overflow is what Enqueue does when the queue is at capacity (see
// driver.Overflow).
type Overflow = driver.Overflow

// The overflow policies.
const (
	// Block waits for room, until the Enqueue ctx ends.
	Block = driver.Block
	// Reject fails the Enqueue with ErrFull.
	Reject = driver.Reject
	// DropNewest refuses the incoming job: Enqueue returns ErrDropped and
	// the job is counted as dropped.
	DropNewest = driver.DropNewest
	// DropOldest accepts the incoming job and evicts the oldest stored job
	// that is not being handled to the dead letters with ReasonEvicted.
	DropOldest = driver.DropOldest
)

// WithOverflow sets what Enqueue does at capacity. The default is [Block].
// It panics if p is not one of the four overflows.
func WithOverflow(p Overflow) Option {
	if p < Block || p > DropOldest {
		panic("queue: WithOverflow(" + p.String() + "): unknown overflow")
	}
	return optionFunc(func(o *options) { o.cfg.Overflow = p })
}

// WithDedupHorizon keeps a job's ID taken for d after its enqueue, even
// once the job was acked or dead-lettered: enqueueing it again within d
// returns ErrDuplicate. Without it (d = 0) an ID is taken only while its job
// is stored. It panics if d is negative.
func WithDedupHorizon(d time.Duration) Option {
	if d < 0 {
		panic("queue: WithDedupHorizon(" + d.String() + "): negative duration")
	}
	return optionFunc(func(o *options) { o.cfg.DedupHorizon = d })
}

// WithDeadLetterLimit bounds the dead letters kept to n: when a job dies
// with n dead letters kept, the oldest is deleted to make room, counted in
// [Stats.DeadEvicted] and reported to [Hooks.OnDeadEvicted]. The default, 0,
// means driver.DefaultDeadLetterLimit (10,000). A backend shared by several
// processes keeps one limit for all of them. It panics if n is negative.
func WithDeadLetterLimit(n int) Option {
	if n < 0 {
		panic("queue: WithDeadLetterLimit(" + strconv.Itoa(n) + "): negative limit")
	}
	return optionFunc(func(o *options) { o.cfg.DeadLetterLimit = n })
}

// WithMaxWait gives every job a start-by deadline d after its enqueue (or
// after its NotBefore, if later) unless Enqueue sets one with [WithStartBy].
// A job not started by then is dead-lettered with [ReasonExpired]. The
// default, 0, sets none. It panics if d is negative.
func WithMaxWait(d time.Duration) Option {
	if d < 0 {
		panic("queue: WithMaxWait(" + d.String() + "): negative duration")
	}
	return optionFunc(func(o *options) { o.maxWait = d })
}

// WithHooks sets functions called on job events (see [Hooks]). A later
// WithHooks replaces an earlier one whole.
func WithHooks(h Hooks) Option { return optionFunc(func(o *options) { o.hooks = h }) }

// WithTimings makes this process's consumers of the queue time every
// handler run: the distributions of wait, run and end-to-end times in
// Stats.Wait, Stats.Run and Stats.EndToEnd then hold every run, not a
// sample of about one in 64 (see [Stats]). A consumer then reads the
// monotonic clock as each handler ends, and as it starts (except on the
// in-memory backend's fast path, see [Stats]). An OnSuccess, OnRetry or
// OnDead hook turns it on too, for [Event.Duration].
func WithTimings() Option { return optionFunc(func(o *options) { o.timed = true }) }

// WithCodec sets how payloads are encoded for backends that store bytes.
// The default codec passes []byte and string payloads through as bytes and
// encodes everything else as JSON. The in-memory backend does not encode.
// It panics if c is nil; New panics if T is not the queue's payload type.
func WithCodec[T any](c Codec[T]) Option {
	if c == nil {
		panic("queue: WithCodec(nil): nil codec")
	}
	return optionFunc(func(o *options) { o.codec = c })
}

// codecFor returns the codec o sets for payloads of type T, or the default.
func codecFor[T any](o *options) Codec[T] {
	switch c := o.codec.(type) {
	case nil:
		return defaultCodec[T]{}
	case Codec[T]:
		return c
	default:
		panic(fmt.Sprintf("queue: WithCodec(%T): not a Codec[%T], the queue's payload type", c, *new(T)))
	}
}

// EnqueueOption sets a property of one job in [Queue.Enqueue]. A nil
// EnqueueOption makes Enqueue panic.
type EnqueueOption interface{ applyJob(*driver.Message) }

type idOption string

func (o idOption) applyJob(m *driver.Message) { m.ID = string(o) }

// WithID sets the job's ID, its deduplication key. Without it, Enqueue
// generates a unique ID. An ID this queue generated may be given again (to
// enqueue a job again under its ID); one that it has not generated yet, but
// would, is refused, so that a generated ID is never taken.
//
// An ID must be one that every backend can store and give back unchanged:
// valid UTF-8 of at most 1024 bytes, without a NUL byte, a carriage
// return or a line feed, and without a space or tab at either end. Enqueue
// and [Queue.Message] refuse any other ID with an error that starts
// "queue: job ID", whatever the backend.
func WithID(id string) EnqueueOption { return idOption(id) }

type keyOption string

func (o keyOption) applyJob(m *driver.Message) { m.Key = string(o) }

// WithKey sets the job's ordering key: jobs with the same key are handled
// one at a time in enqueue order, retries included.
//
// A key obeys the rule of [WithID] (valid UTF-8 of at most 1024 bytes,
// without NUL, CR or LF, without a space or tab at either end): Enqueue and
// [Queue.Message] refuse any other key with an error that starts
// "queue: ordering key", whatever the backend.
func WithKey(key string) EnqueueOption { return keyOption(key) }

type uniqueOption struct {
	key    string
	period time.Duration
}

func (o uniqueOption) applyJob(m *driver.Message) { m.Unique, m.UniqueFor = o.key, o.period }

// WithUnique gives the job a unique key: while a job with key is stored
// (waiting, delayed or running), and for period after it left the queue
// (acked, dead-lettered or evicted), Enqueue refuses another job with key,
// returning the ID of the job that holds it and [ErrNotUnique]: "at most one
// refresh of a user's feed per ten minutes" is WithUnique("refresh:"+user,
// 10*time.Minute). The period is the job's own, beside the queue's dedup
// horizon of IDs ([WithDedupHorizon]), which is checked first. A redriven
// dead letter has no unique key. Every process of a queue sees the same
// keys: the backend holds them.
//
// A key obeys the rule of [WithID]; Enqueue refuses any other with an error
// that starts "queue: unique key". It panics if period is negative.
func WithUnique(key string, period time.Duration) EnqueueOption {
	if period < 0 {
		panic("queue: WithUnique(" + strconv.Quote(key) + ", " + period.String() + "): negative period")
	}
	return uniqueOption{key: key, period: period}
}

type notBeforeOption time.Time

func (o notBeforeOption) applyJob(m *driver.Message) { m.NotBefore = time.Time(o) }

// WithNotBefore delays the job's first delivery until t. A zero t, or one
// already past, delays nothing.
func WithNotBefore(t time.Time) EnqueueOption { return notBeforeOption(t) }

type delayOption time.Duration

func (o delayOption) applyJob(m *driver.Message) {
	if o > 0 {
		m.NotBefore = time.Now().Add(time.Duration(o))
	}
}

// WithDelay delays the job's first delivery by d from now. A d of zero or
// less delays nothing.
func WithDelay(d time.Duration) EnqueueOption { return delayOption(d) }

type startByOption time.Time

func (o startByOption) applyJob(m *driver.Message) { m.StartBy = time.Time(o) }

// WithStartBy sets the job's start-by deadline: if it is first delivered
// after t it is dead-lettered with [ReasonExpired] instead of handled. A
// zero t sets none (but see [WithMaxWait]).
func WithStartBy(t time.Time) EnqueueOption { return startByOption(t) }

// ConsumerOption configures a Consumer in [Queue.Consume]. Like [Option],
// an option given an impossible setting panics when it is called, and a nil
// ConsumerOption makes Consume panic.
type ConsumerOption interface{ applyConsumer(*consumerOptions) }

type consumerOptions struct {
	workers     int
	workersSet  bool // WithWorkers was given
	share       *Share
	shareName   string
	shareWeight int
	lease       time.Duration
	maxAttempts int
	maxSnoozes  int
	backoff     backoff.Schedule
	rate        ratelimit.Rate // WithRateLimit; zero: none
}

type consumerOptionFunc func(*consumerOptions)

func (f consumerOptionFunc) applyConsumer(o *consumerOptions) { f(o) }

// WithWorkers sets how many jobs are handled at once. The default is
// runtime.GOMAXPROCS(0), or with [WithShare] the size of the Share, of
// whose slots n is then the most the consumer holds at once. It panics if
// n < 1.
func WithWorkers(n int) ConsumerOption {
	if n < 1 {
		panic("queue: WithWorkers(" + strconv.Itoa(n) + "): need at least 1")
	}
	return consumerOptionFunc(func(o *consumerOptions) { o.workers, o.workersSet = n, true })
}

// WithLease sets how long a handler may run before its ctx is cancelled (with
// cause [ErrLeaseExpired]) and the job redelivered, the attempt spent. A
// handler that still returns nil acks its job: its work is done. The
// consumer looks at its running handlers every d/16 (but every 100µs at
// most often and every 10ms at least often), instead of arming a timer per
// job: a handler is cancelled once it has run for d, never sooner, and up
// to that interval later (later still when every core of the machine is
// busy and the consumer's goroutine that looks waits for one). While the
// handler runs, the consumer keeps renewing the job's lease in the backend
// (which it takes at 1.5 times d, renewing it every d/2), so the job is not
// delivered to anyone else; if the consumer goes away, the backend
// redelivers the job when that lease ends. If the backend refuses a renewal
// ([ErrLeaseLost]: the renewals came too late, as they may with a lease of
// a few milliseconds on a busy machine), the handler's ctx is cancelled
// with that cause. The default is 30s. It panics if d is not positive.
func WithLease(d time.Duration) ConsumerOption {
	if d <= 0 {
		panic("queue: WithLease(" + d.String() + "): need a positive lease")
	}
	return consumerOptionFunc(func(o *consumerOptions) { o.lease = d })
}

// WithMaxAttempts sets how many attempts a job gets, the first included,
// before a failure dead-letters it with [ReasonAttempts]. It panics if
// n < 1.
//
// The default is 10, where retry's is 3: a retry holds its caller, who
// waits for every attempt and delay, so its attempts are few and its delays
// short; a job holds no caller, and the default backoff spreads its retries
// over minutes (nine delays of 1s, 2s, 4s, ... 4m16s, equal-jittered: the
// ten attempts span 4 to 9 minutes), long enough to outlast a dependency's
// brief outage.
//
// An attempt is a handler run: every backend counts one when a handler
// starts on the job ([driver.Backend.Start]), whether the run then returns, fails,
// panics, outlives its lease or dies with its process. A delivery that
// never reached a handler spends none: a job released at shutdown, or
// prefetched by a process that died before handing it to a worker, comes
// back with the same [Job.Attempt]. A job whose handler took its process
// down every time (a poison job) is dead-lettered with ReasonAttempts when
// it is delivered after n such runs, without running again: its dead
// letter's Job.Attempt and the OnDead event's Attempt are n, and its
// history has the n runs, each ended by [ErrLeaseExpired].
func WithMaxAttempts(n int) ConsumerOption {
	if n < 1 {
		panic("queue: WithMaxAttempts(" + strconv.Itoa(n) + "): need at least 1")
	}
	return consumerOptionFunc(func(o *consumerOptions) { o.maxAttempts = n })
}

// WithBackoff sets the redelivery delay after a failed attempt: failed attempt
// n (from 1) waits the delay of retry n-1 of p, as a retry loop would.
//
// A backend does not keep a job's previous delay, which decorrelated jitter
// draws from: the consumer replays p's [backoff.Sequence] up to retry n-1
// instead, so each delay follows the same distribution as in an in-process
// loop (with backoff.WithSeed, the delays are exactly p.Delays), though it is
// not drawn from the job's actual previous delay.
//
// A server's hint attached to the handler's error with retry.After replaces
// the delay, clamped to p.Cap() or one minute (retry's default MaxHint),
// whichever is longer, and jittered only upward (p.Spread), as in
// retry.Policy.Next.
//
// The default is backoff.Exponential(time.Second, 2, 10*time.Minute) with
// equal jitter. The zero Schedule retries at once.
func WithBackoff(p backoff.Schedule) ConsumerOption {
	return consumerOptionFunc(func(o *consumerOptions) { o.backoff = p })
}
