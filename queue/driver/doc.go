// Package driver is the contract between package queue and the backends
// that store its jobs, as database/sql/driver is between database/sql and
// its drivers. Users of queue do not need it: they pick a backend
// (memory.New, the default, or a broker backend such as queue/jetstream)
// and call queue. Backend authors implement [Backend] and check it with
// queue/queuetest.
//
// Who calls what: a queue.Queue calls every method of its Backend (Open
// once, from queue.New; Close once, from the queue's Close); its consumers
// call Receive, Start, Extend and the settling methods (Ack, Nack, Release,
// Bury) from their own goroutines, concurrently. A backend calls nothing
// of the queue's: it gets a [Config], [Message]s and [Delivery]s, and
// returns results, [Stats] and the errors below. The queue looks for the
// optional interfaces a backend may implement: at queue.New for
// [InProcess] and [LossCounter]; at Consume for [SharedLease]; in Health
// for [Reconnecter]; at Consume with a rate limit, for [RateLimiter]; at
// Consume without a rate limit or a Share, for [ReceiveStarter]; the
// queue's operator verbs (Jobs, Inspect, Cancel, Pause, ...) look for
// [Admin], and fail with errors.ErrUnsupported without it.
//
// The sentinel errors ([ErrFull], [ErrDuplicate], ...) are the same values
// that package queue exports under the same names, so a user's errors.Is
// matches a backend's error under either name; [Attempt], [Reason] and
// [Overflow] are the types behind queue's names of them.
//
// A backend that talks to a broker reports its calls by one rule, the one
// in the doc of [Call]: [Call.Context] bounds a call, [Call.Fail] turns its
// failure into the error the queue expects (context.Cause(ctx) and
// [ErrUnavailable] when the caller's ctx ended; ErrUnavailable when the call
// timed out or the broker could not be reached, which each backend decides
// for its own client's errors); a [Lifecycle], marked by the backend's New
// ([Lifecycle.Init]), runs its Open, marks its Close, gives a call made
// before Open or after Close its error ([Lifecycle.Check], and
// [Lifecycle.Begin] for a call that asks the broker), and panics in those
// calls on a zero Backend, as [Call.Made] does where a backend checks
// without its Lifecycle. A
// process asking for a shared setting other than the queue's gets a
// [SettingsError] ([Shared.Diff] and [CompareSettings] find it);
// [AgreeLease] is the body of a CheckLease.
// An Enqueue at capacity fails with [Overflow.Refusal] under the policies that
// refuse a job, and a waiting Receive waits with [Call.Wait]; a Receive's
// query runs with [Call.UntilDeadline], so that a receiver cancelled
// meanwhile can give back the job it took, until it gives up waiting
// ([WithAbandon]). These are
// exported, not internal to this repository, because the ErrUnavailable
// rule is part of the contract: a third-party backend must report its calls
// as the repository's backends do, and does so by calling the same code.
package driver

// Where things are: backend.go holds the Backend interface and what crosses
// it (Message, Delivery, DeadMessage, the results, Stats, SharedLease,
// Reconnecter, LossCounter, RateLimiter, ReceiveStarter); admin.go Admin, the operator's verbs,
// with Filter, Cursor, JobInfo and JobStatus, and Gather (and NewGather), List and Count
// read in a backend's process; call.go Call, how a broker backend bounds, reports and waits
// for its calls, and WithAbandon; lifecycle.go Lifecycle, its state from Open to Close; settings.go Shared, SettingsError, CompareSettings
// and AgreeLease, the shared settings; config.go Config and Overflow;
// attempt.go Attempt and Reason;
// errors.go the sentinel errors; inprocess.go InProcess, the optional
// interface of a backend in the queue's process.
