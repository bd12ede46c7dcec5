package pool

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/corral-go/corral/internal/overflow"
)

// Overflow says what Submit does when the pool cannot take a task at once: every worker is
// busy and the queue is full (or the queue has capacity 0). The zero value is Block.
//
// A worker is busy from the moment it takes a task until the task returns. It is free again
// before the task's result is delivered: by the time a Handle resolves, a Group learns of the
// task's end or Hooks.OnError is called, a submit may hand the worker its next task (which
// then waits for the delivery to end), so Call, Wait, Call on a pool of one idle worker never
// meets the overflow.
type Overflow uint8

const (
	// Block makes Submit wait for room. The wait ends with context.Cause(ctx) when the
	// submitter's ctx ends, or with ErrClosed when the pool closes. A submitter whose ctx has
	// ended is never admitted, even if room appears before it notices: it is refused with
	// context.Cause(ctx) and counted in Stats.Rejected. Blocked submitters are served first
	// come, first served: a later submitter never overtakes an earlier one. A task of the
	// pool that blocks this way keeps its worker: if every worker runs a task that submits to
	// the full pool, they wait until their ctx ends or the pool is closed (see Pool.Submit).
	Block Overflow = iota
	// Reject makes Submit return an error matching ErrFull at once.
	Reject
	// DropNewest refuses the incoming task: it is reported to Hooks.OnDrop with reason
	// ReasonRefused, counted, and Submit returns an error matching ErrDropped.
	DropNewest
	// DropOldest evicts the oldest queued task to make room for the incoming one. The evicted
	// task is reported to Hooks.OnDrop with reason ReasonEvicted and counted, and its Handle
	// (if any) resolves with an error matching ErrDropped. With a queue capacity of 0 there is
	// nothing to evict, and the incoming task is refused as with DropNewest.
	DropOldest
	// CallerRuns runs the task for the submitter, before Submit returns, on a goroutine of
	// its own that the submitter waits for (as Group does for the tasks it runs inline), so
	// that a runtime.Goexit in the task fails it with ErrGoexit, like a worker's task, and
	// does not end the submitter. Its panic is recovered and reported like any task's; its
	// context carries the submitter's values, still ends when the pool is shut down, and
	// Close waits for it.
	CallerRuns
)

// String returns the overflow's name in lower case, hyphenated: "block", "reject",
// "drop-newest", "drop-oldest" or "caller-runs" (the same spelling as queue's Overflow).
func (o Overflow) String() string { return overflow.Name(int(o), int(CallerRuns)) }

// Reason says why a task did not run. It is passed to Hooks.OnDrop in a DropEvent.
type Reason uint8

const (
	// ReasonRefused: the incoming task was refused because the pool was full (DropNewest).
	ReasonRefused Reason = iota + 1
	// ReasonEvicted: the task was the oldest in a full queue and a newer task took its place
	// (DropOldest).
	ReasonEvicted
	// ReasonExpired: the task's context was already done when a worker picked it up, so it
	// was skipped ("expired in queue"); it is counted in Stats.Skipped.
	ReasonExpired
	// ReasonShutdown: the task was still queued when Close gave up waiting, so it was
	// abandoned.
	ReasonShutdown
)

// String returns the reason's word in lower case: "refused", "evicted", "expired" or
// "shutdown".
func (r Reason) String() string {
	switch r {
	case ReasonRefused:
		return "refused"
	case ReasonEvicted:
		return "evicted"
	case ReasonExpired:
		return "expired"
	case ReasonShutdown:
		return "shutdown"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// An Option configures a Pool. Options are passed to New and applied in order; a later option
// of the same kind replaces an earlier one. A nil Option makes New panic.
type Option interface{ apply(*options) }

type options struct {
	overflow Overflow
	hooks    Hooks
	idle     time.Duration
	timed    bool         // WithTimings, or Hooks.OnError (which reports each failed task's run time)
	name     string       // WithName
	logger   *slog.Logger // WithLogger
}

// defaultIdleTimeout is how long a worker waits for work before it exits.
const defaultIdleTimeout = time.Second

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithOverflow sets what Submit does when the pool is full (default Block). It panics if o is
// not one of the Overflow constants.
func WithOverflow(o Overflow) Option {
	if o > CallerRuns {
		panic("pool: WithOverflow(" + o.String() + "): unknown overflow")
	}
	return optionFunc(func(opts *options) { opts.overflow = o })
}

// WithHooks sets the functions the pool calls when a task will not run or fails (see Hooks).
// A later WithHooks replaces an earlier one whole. Hooks that are not set cost nothing.
func WithHooks(h Hooks) Option {
	return optionFunc(func(o *options) { o.hooks = h })
}

// Hooks are the functions a Pool calls about its tasks; set them with WithHooks. A nil field
// is not called. Each receives first the context the task was submitted with (so it carries
// the submitter's values), then an event value.
//
// Hooks must not panic or call runtime.Goexit. A hook's panic is not recovered: like any
// unrecovered panic, it ends the program. A hook's Goexit ends the goroutine that called the
// hook, but it is not blamed on the task: the task is counted once, as what it did, and its
// Handle or Group still resolves. That goroutine is a worker (it is replaced), the helper
// goroutine of a task run for its caller (CallerRuns, Group: the caller returns), or, for
// OnDrop, a submitter, Group.Wait or Close caller, which then does not return.
type Hooks struct {
	// OnDrop is called once for every task that will not run: refused, evicted, expired in
	// queue, or abandoned at shutdown. It is called synchronously, outside the pool's lock,
	// from the goroutine that caused the drop (a submitter, a worker or Close); it should
	// return quickly and must not call Close.
	OnDrop func(ctx context.Context, e DropEvent)
	// OnError is called for every task submitted with Submit that fails: it returned an
	// error, panicked (Err is a *PanicError) or called runtime.Goexit (ErrGoexit). Tasks
	// submitted with Call or Group.Go report their failures to their Handle or Group instead.
	// It runs in the goroutine that ran the task, right after it; it should return quickly.
	// To report how long each failed task ran, a pool with OnError times every task as
	// WithTimings does: two clock reads per task, and Stats' distributions are recorded too.
	OnError func(ctx context.Context, e ErrorEvent)
}

// DropEvent describes a task that will not run, for Hooks.OnDrop. It implements
// slog.LogValuer.
type DropEvent struct {
	// Reason says why the task will not run.
	Reason Reason
}

// LogValue returns a group of the event's non-zero fields: reason.
func (e DropEvent) LogValue() slog.Value {
	if e.Reason == 0 {
		return slog.GroupValue()
	}
	return slog.GroupValue(slog.String("reason", e.Reason.String()))
}

// ErrorEvent describes a task that failed, for Hooks.OnError. It implements slog.LogValuer.
type ErrorEvent struct {
	// Err is the task's failure: the error it returned, a *PanicError, or ErrGoexit.
	Err error
	// Duration is how long the task ran, from its start to its return (or panic, or Goexit).
	Duration time.Duration
}

// LogValue returns a group of the event's non-zero fields: err and duration.
func (e ErrorEvent) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 2)
	if e.Err != nil {
		attrs = append(attrs, slog.Any("err", e.Err))
	}
	if e.Duration != 0 {
		attrs = append(attrs, slog.Duration("duration", e.Duration))
	}
	return slog.GroupValue(attrs...)
}

// WithIdleTimeout sets how long an idle worker waits for a task before its goroutine exits
// (default 1s). Workers are started again on demand. With d == 0 a worker exits as soon as it
// finds the queue empty. It panics if d is negative.
func WithIdleTimeout(d time.Duration) Option {
	if d < 0 {
		panic("pool: WithIdleTimeout(" + d.String() + "): negative timeout")
	}
	return optionFunc(func(o *options) { o.idle = d })
}

// WithTimings makes the pool time every task: the distributions of wait, run and end-to-end
// times in Stats.Wait, Stats.Run and Stats.EndToEnd then hold every task, not a sample of
// about one in 64 (see Stats). It reads the monotonic clock when each task is submitted and
// when it returns. A Hooks.OnError turns it on too, for ErrorEvent.Duration.
func WithTimings() Option {
	return optionFunc(func(o *options) { o.timed = true })
}
