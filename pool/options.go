package pool

import (
	"context"
	"strconv"
	"time"
)

// Policy says what Submit does when the pool cannot take a task at once: every worker is busy
// and the queue is full (or the queue has capacity 0). The zero value is Block.
type Policy uint8

const (
	// Block makes Submit wait for room. The wait ends with context.Cause(ctx) when the
	// submitter's ctx ends, or with ErrClosed when the pool closes. A submitter whose ctx has
	// ended is never admitted, even if room appears before it notices: it is refused with
	// context.Cause(ctx) and counted in Stats.Rejected. Blocked submitters are served first
	// come, first served: a later submitter never overtakes an earlier one.
	Block Policy = iota
	// Reject makes Submit return an error matching ErrFull at once.
	Reject
	// DropNewest refuses the incoming task: it is reported to the drop hook with reason
	// Refused, counted, and Submit returns an error matching ErrDropped.
	DropNewest
	// DropOldest evicts the oldest queued task to make room for the incoming one. The evicted
	// task is reported to the drop hook with reason Evicted and counted, and its Handle (if
	// any) resolves with an error matching ErrDropped. With a queue capacity of 0 there is
	// nothing to evict, and the incoming task is refused as with DropNewest.
	DropOldest
	// CallerRuns runs the task in the submitting goroutine, before Submit returns. Its panic
	// is recovered and reported like any task's; its context still ends when the pool is shut
	// down, and Close waits for it.
	CallerRuns
)

// String returns the policy's name, as written in Go ("Block", "DropOldest", ...).
func (p Policy) String() string {
	switch p {
	case Block:
		return "Block"
	case Reject:
		return "Reject"
	case DropNewest:
		return "DropNewest"
	case DropOldest:
		return "DropOldest"
	case CallerRuns:
		return "CallerRuns"
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// Reason says why a task did not run. It is passed to the drop hook.
type Reason uint8

const (
	// Refused: the incoming task was refused because the pool was full (DropNewest).
	Refused Reason = iota + 1
	// Evicted: the task was the oldest in a full queue and a newer task took its place
	// (DropOldest).
	Evicted
	// Expired: the task's context was already done when a worker picked it up, so it was
	// skipped ("expired in queue").
	Expired
	// Shutdown: the task was still queued when Close gave up waiting, so it was abandoned.
	Shutdown
)

// String returns a short description of the reason, e.g. "expired in queue".
func (r Reason) String() string {
	switch r {
	case Refused:
		return "refused"
	case Evicted:
		return "evicted by a newer task"
	case Expired:
		return "expired in queue"
	case Shutdown:
		return "abandoned at shutdown"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// An Option configures a Pool. Options are passed to New.
type Option interface{ apply(*options) }

type options struct {
	policy  Policy
	onDrop  func(ctx context.Context, r Reason)
	onError func(ctx context.Context, err error)
	idle    time.Duration
	timed   bool
}

// defaultIdleTimeout is how long a worker waits for work before it exits.
const defaultIdleTimeout = time.Second

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithOverflow sets the overflow policy (default Block). It panics if p is not one of the
// Policy constants.
func WithOverflow(p Policy) Option {
	if p > CallerRuns {
		panic("pool: invalid overflow policy " + p.String())
	}
	return optionFunc(func(o *options) { o.policy = p })
}

// WithDropHook sets a function called once for every task that will not run: refused,
// evicted, expired in queue, or abandoned at shutdown. ctx is the context the task was
// submitted with (so it carries the submitter's values). The hook is called synchronously,
// outside the pool's lock, from the goroutine that caused the drop (a submitter, a worker or
// Close); it should return quickly and must not call Close. See WithErrorHook for hooks that
// panic or call runtime.Goexit.
func WithDropHook(f func(ctx context.Context, r Reason)) Option {
	return optionFunc(func(o *options) { o.onDrop = f })
}

// WithErrorHook sets a function called for every task submitted with Submit that fails: it
// returned an error, panicked (err is a *PanicError) or called runtime.Goexit. Tasks submitted
// with Call or Group.Go report their failures to their Handle or Group instead. ctx is the
// context the task was submitted with. The hook runs in the goroutine that ran the task, right
// after it; it should return quickly.
//
// Hooks (this one and the drop hook) must not panic or call runtime.Goexit. A hook's panic is
// not recovered: like any unrecovered panic, it ends the program. A hook's Goexit ends the
// goroutine that called the hook (a worker is replaced; a submitter, Group.Wait or Close
// caller does not return), but it is not blamed on the task: the task is counted once, as
// what it did, and its Handle or Group still resolves.
func WithErrorHook(f func(ctx context.Context, err error)) Option {
	return optionFunc(func(o *options) { o.onError = f })
}

// WithIdleTimeout sets how long an idle worker waits for a task before its goroutine exits
// (default 1s). Workers are started again on demand. With d == 0 a worker exits as soon as it
// finds the queue empty. It panics if d is negative.
func WithIdleTimeout(d time.Duration) Option {
	if d < 0 {
		panic("pool: negative idle timeout")
	}
	return optionFunc(func(o *options) { o.idle = d })
}

// WithTimings turns on the measurement of queue-wait and run times in Stats.QueueWait and
// Stats.RunTime. It costs two reads of the monotonic clock per task (one when the task is
// queued, one when it returns; a worker's end-of-task read doubles as the start of its next
// task), which is a large part of the cost of a tiny task, so it is off by default: without
// it, both summaries still count tasks but their Total and Max stay zero.
func WithTimings() Option {
	return optionFunc(func(o *options) { o.timed = true })
}
