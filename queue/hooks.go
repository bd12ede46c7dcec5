package queue

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/corral-go/corral/internal/hooks"
	"github.com/corral-go/corral/internal/panics"
)

// Hooks are optional functions called on job events, to wire logging,
// metrics or tracing. Each gets the context of the work it reports on
// first, then the event. They run synchronously on the goroutine where the
// event happens (the producer's or a worker's), may run concurrently with
// each other, and must not block. A nil hook is skipped, and costs nothing:
// a consumer reads the clock for [Event.Duration] only when OnSuccess,
// OnRetry or OnDead is set (or [WithTimings]); otherwise only for its
// sample of runs (see [Stats]), and Event.Duration stays 0.
//
// The contexts: OnEnqueue, OnDrop, and OnDead of a job evicted by
// DropOldest get the ctx of the Enqueue (or Redrive) that caused them.
// OnStart, and OnSuccess, OnRetry and OnDead of a job a handler ran on, get
// the handler's ctx: it carries the values of the ctx given to Consume, and
// may be done by then (its cause says why: [ErrLeaseExpired],
// [ErrLeaseLost], or one matching [ErrClosed]). OnDead of a job
// dead-lettered without a run (its payload could not be decoded, its
// attempts were used up, its start-by deadline passed) gets a context with
// the values of Consume's ctx. A hook must not keep its ctx after it
// returns.
//
// A hook that panics on one of a consumer's goroutines (OnStart, OnSuccess,
// OnRetry, OnDead, and OnDeadEvicted and OnHealth when a worker's backend
// call caused them) does not change what happens to the job: the panic is
// recovered, and [Consumer.Close] re-raises the first one as a
// *[PanicError] whose Where is the hook's name. A hook running on a
// producer's goroutine (OnEnqueue, OnDrop, the others when an Enqueue,
// Redrive or Stats caused them) panics out of that call. (The Stats calls
// of [Consumer.Drain] are the consumer's: Drain re-raises their hooks'
// panics as Close does, once the consumer is closed.)
type Hooks struct {
	// OnEnqueue is called after a job was stored (by Enqueue or Redrive).
	OnEnqueue func(ctx context.Context, e Event)
	// OnStart is called just before the handler runs.
	OnStart func(ctx context.Context, e Event)
	// OnSuccess is called after the job was acked, with the handler's
	// Duration.
	OnSuccess func(ctx context.Context, e Event)
	// OnRetry is called after a failed job was scheduled again, with the
	// error, the delay and the handler's Duration.
	OnRetry func(ctx context.Context, e Event)
	// OnDead is called after a job was dead-lettered, with the reason, the
	// error and (if a handler ran) its Duration. This includes jobs evicted
	// by DropOldest, with ReasonEvicted.
	OnDead func(ctx context.Context, e Event)
	// OnDrop is called when DropNewest refused a job at capacity, with Err
	// ErrDropped.
	OnDrop func(ctx context.Context, e Event)
	// OnDeadEvicted is called when a dead letter was deleted to keep the
	// dead letters within the limit (see [WithDeadLetterLimit]), with the
	// ctx of the call that made room (an Enqueue's, or a consumer's backend
	// calls') and the evicted dead letter's ID.
	OnDeadEvicted func(ctx context.Context, e Event)
	// OnHealth is called when the backend became unreachable or reachable
	// again, and when Health.Losses grew (the backend found that the broker
	// had lost what it stored for the queue: see [Health]), with the ctx of
	// the backend call that found it (for a loss: the consumer's Receive,
	// Drain's or the caller's Stats after which the queue found the count
	// grown) and the queue's Health right after the change. It runs on the
	// goroutine of that call; two changes found at once may be reported in
	// either order, so read Health.Since and Health.Losses to order them.
	OnHealth func(ctx context.Context, h Health)
}

// Event describes a job event for a hook. Fields that do not apply to an
// event are zero. It implements [slog.LogValuer]: slog.InfoContext(ctx,
// "job dead", "job", e) logs a group of its non-zero fields.
type Event struct {
	// ID is the job's ID (for OnDeadEvicted, the evicted dead letter's).
	ID string
	// Key is the job's ordering key, "" for none.
	Key string
	// Attempt is the number of the handler run the event is about, 1 for
	// the first (OnStart, OnSuccess, OnRetry, OnDead); for a job
	// dead-lettered without a run, the attempts it had used. Zero for the
	// producer's events.
	Attempt int
	// Err is the handler's error (OnRetry, OnDead), the reason a job died
	// without a run (OnDead), or ErrDropped (OnDrop).
	Err error
	// Delay is the redelivery delay (OnRetry).
	Delay time.Duration
	// Reason is why the job was dead-lettered (OnDead).
	Reason Reason
	// Duration is how long the handler ran, from its start to its return or
	// panic (OnSuccess, OnRetry, and OnDead of a job a handler ran on), as
	// [Stats].Run times it.
	Duration time.Duration
}

// LogValue returns a group of the event's non-zero fields: id, key,
// attempt, err, delay, reason and duration.
func (e Event) LogValue() slog.Value {
	return hooks.NonZero(slog.String("id", e.ID), slog.String("key", e.Key), slog.Int("attempt", e.Attempt),
		slog.Any("err", e.Err), slog.Duration("delay", e.Delay), slog.String("reason", string(e.Reason)),
		slog.Duration("duration", e.Duration))
}

// PanicError is a panic the queue recovered: its value, the stack of the
// goroutine that panicked, and where it happened. It is the error of a
// handler that panicked (in [Event.Err] for OnDead, its text in the job's
// [Attempt.Error]; the job is dead-lettered with [ReasonPanic]), of a codec
// that panicked decoding a payload, and the value [Consumer.Close] panics
// with when a hook or the backend panicked on one of the consumer's
// goroutines.
type PanicError struct {
	// Where says what panicked: "Handler" (the handler, or a method of the
	// error it returned), "Codec.Unmarshal", the name of a hook of [Hooks]
	// ("OnStart", "OnSuccess", ...), "Backend." and a method of the
	// driver.Backend ("Backend.Receive"), "Periodic payload" for the payload
	// function of a periodic job ([Queue.Periodic]), or "Consumer" for the
	// consumer's own code (a bug of corral's).
	Where string
	// Value is the value passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine, captured when the
	// panic was recovered.
	Stack []byte
}

// Not pool's and scope's PanicError (internal/panics.Error) on purpose: that one names a
// task of a scope (Name, Index), carries the scope's other failures and says nothing of
// where in a consumer a panic was; this one says just that, in Where. One shape for both
// would rename Where, which users read, or give pool and scope a field they never set.

// Error says what panicked, with the panic value and the stack.
func (e *PanicError) Error() string {
	var what string
	switch {
	case e.Where == "Handler":
		what = "handler panicked"
	case e.Where == "Codec.Unmarshal":
		what = "codec panicked decoding the payload"
	case strings.HasPrefix(e.Where, "On"):
		what = e.Where + " hook panicked"
	default:
		what = e.Where + " panicked"
	}
	return fmt.Sprintf("queue: %s: %v\n%s", what, e.Value, e.Stack)
}

// Unwrap returns the panic value if it is an error, so that errors.Is and
// errors.As see it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// callHook calls the hook h of a consumer's goroutine with ctx and ev. A
// panic in h is recovered, so that the job goes on (a hook observes jobs,
// it does not decide their fate); the first one is kept, as a *PanicError
// with Where set to name, and re-raised by Close.
func callHook[T, E any](ctx context.Context, c *Consumer[T], name string, h func(context.Context, E), ev E) {
	var catch panics.Catcher
	defer func() {
		if p := catch.Panic; p != nil {
			c.hookPanic.CompareAndSwap(nil, &PanicError{Where: name, Value: p.Value, Stack: p.Stack})
		}
	}()
	defer catch.Recover()
	h(ctx, ev)
	catch.Returned()
}
