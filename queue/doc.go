// Package queue is a job queue: producers enqueue immutable payloads with a
// stable ID; a bounded set of workers handles them; the queue acks,
// redelivers with backoff, and dead-letters. Every state a job can be in is
// explicit and visible: stored (ready, delayed, in flight), acked, or dead
// with a reason and its attempt history.
//
//	q, err := queue.New[Email](ctx, queue.WithCapacity(10_000), queue.WithOverflow(queue.Reject))
//	...
//	defer q.Close(shutdownCtx) // closes the consumers and the backend
//	id, err := q.Enqueue(ctx, Email{To: "ada@example.com"}, queue.WithKey("ada@example.com"))
//	if errors.Is(err, queue.ErrFull) { /* shed load */ }
//
//	c, err := q.Consume(ctx, func(ctx context.Context, job queue.Job[Email]) error {
//		return send(ctx, job.Payload) // nil acks; an error retries with backoff
//	}, queue.WithWorkers(8), queue.WithMaxAttempts(5))
//	...
//	report, err := c.Drain(shutdownCtx) // works off the backlog, then closes
//
// # Guarantees
//
//   - Enqueue is bounded: a capacity and an [Overflow] policy (Block, Reject,
//     DropNewest, DropOldest). A job evicted by DropOldest goes to the dead
//     letters with [ReasonEvicted]; nothing is dropped silently.
//   - An ID enqueued again while its job is stored, or within the dedup
//     horizon ([WithDedupHorizon]), is not stored twice: Enqueue returns
//     [ErrDuplicate].
//   - A handler returning nil acks its job. An error redelivers it after the
//     consumer's backoff delay, without holding a worker while it waits.
//     An error marked permanent (retry.Permanent), a panic, or a failure of
//     the last allowed attempt dead-letters it.
//   - A handler that runs past its lease has its context cancelled with
//     cause [ErrLeaseExpired] and its job is redelivered (the attempt is
//     spent). While its handler runs, the consumer renews the job's lease
//     in the backend, so that the job is not delivered again meanwhile;
//     renewals too late for the backend (a lease of milliseconds on a
//     starved machine) let it deliver the job again, and then the handler,
//     if it still runs, has its context cancelled with cause [ErrLeaseLost].
//   - An attempt is a handler run: every backend counts one when a handler
//     starts (driver.Backend's Start), and none for a delivery that never reached
//     a handler (released at shutdown, or prefetched by a process that
//     died). [WithMaxAttempts] and [Job.Attempt] count handler runs.
//   - Every buffer is bounded, the dead letters included
//     ([WithDeadLetterLimit]: the oldest is evicted, counted and reported),
//     and the in-memory backend gives its memory back once drained.
//   - Faults are visible: a broker backend bounds every request with a
//     deadline and fails with [ErrUnavailable] when the broker cannot be
//     reached in time (an Enqueue may then have stored the job: enqueue
//     again with the same ID); [Queue.Health] tells "no work" from "no
//     broker".
//   - Every goroutine has an owner: [Consumer.Close] returns only after every
//     handler has returned (at its deadline it cancels them, then still
//     waits), so a handler must return once its context is done.
//     [Queue.Close] closes the queue's consumers and its backend, which the
//     queue owns.
//   - Shutdown keeps its word: [Consumer.Drain] works off the backlog (ready,
//     delayed and in-flight jobs) until it finds none stored, then closes,
//     or stops at its ctx and says so. What survives the process is the
//     backend's: with the in-memory backend, nothing; with a broker backend,
//     every stored job and dead letter.
//   - Jobs with the same ordering key ([WithKey]) are handled one at a time
//     in enqueue order. A failing job holds its key, through its retry
//     delays, until it is acked or dead-lettered; other keys run in parallel.
//   - Accounting: every accepted job ends acked, dead-lettered, or still
//     stored in the backend. [Consumer.Drain] and [Consumer.Close] report
//     what happened to the jobs they handled; jobs they did not finish stay
//     in the backend for the next consumer of the same queue.
//   - Deploys keep jobs: a job records its payload's version
//     ([WithVersion]); a consumer upgrades older versions it knows
//     ([WithUpgrade]) and hands back, without spending an attempt, a job of
//     a version it does not understand, for a consumer that does, until the
//     version wait ends ([WithVersionWait], then [ReasonVersion]). A
//     payload that does not decode is dead-lettered with [ReasonDecode].
//   - Consumers can share workers ([Share]): by weight or strict priority,
//     each capped by its [WithWorkers], so that user-facing work does not
//     wait behind a backfill and a backfill never takes every worker.
//   - Latency is measured: [Stats] holds the distributions of this
//     process's handler runs (wait, run, end to end) as latency.Histogram
//     values, from which p50, p95 and p99 are read and which add up across
//     processes: of a sample of about one run in 64 by default, of every
//     run with [WithTimings].
//   - Events are observable: [WithHooks] calls a function per job event,
//     [WithLogger] logs them to a *slog.Logger with one option (as in
//     scope, pool and retry), and [WithName] names the queue in those
//     records and in a pprof label (queue=name) on its handler runs.
//   - Panics have one shape: a recovered panic is a *[PanicError] (Where,
//     Value, Stack), whether a handler, a hook or the backend panicked.
//   - Misuse panics at once, in the caller's goroutine, with a "queue:"
//     message naming the call: an option with an impossible setting
//     ("queue: WithMaxAttempts(0): need at least 1"), a nil option, context
//     or handler, and the methods of a zero Queue or Consumer ("queue: zero
//     Queue: use queue.New"). Returned errors are the environment's.
//
// # Backends
//
// A backend stores the jobs. Four come with corral: queue/memory (the
// default: [New] without [WithBackend] uses memory.New) keeps them in the
// process; queue/jetstream, queue/postgres and queue/redis keep them in NATS
// JetStream, PostgreSQL and Redis, across processes. [WithBackend] takes any
// driver.Backend: a backend implements the contract of queue/driver, written
// for backend authors, and every backend passes the conformance suite in
// queue/queuetest. Payloads cross a byte backend through the queue's
// [Codec]; the in-memory backend (a driver.InProcess) is given the values
// themselves, so a payload must not be mutated after Enqueue.
//
// # Time
//
// Delays, leases, start-by deadlines and the dedup horizon use the time
// package, so a queue with the in-memory backend created inside a
// testing/synctest bubble runs on the bubble's virtual clock.
package queue

// Where things are: queue.go holds Queue (New, Enqueue, the dead letters, Close), stats.go
// Stats, codec.go payload encoding and Codec, options.go every option (and the Overflow alias),
// admin.go the operator's verbs (Jobs, Count, Inspect, Cancel, Pause, Resume, the bulk verbs;
// Filter, JobInfo, JobStatus, Page), hooks.go Hooks, Event and PanicError, observe.go WithName,
// WithLogger and the pprof labels, job.go Job, DeadLetter and the names of Attempt and Reason,
// headers.go WithHeaders, errors.go the sentinel errors; consumer.go the Consumer, worker.go
// its worker loops, settle.go how a job is settled, lease.go the renewal of the backend
// leases, drain.go Consumer.Drain, health.go Health, version.go payload versions
// (WithVersion, WithUpgrade, WithVersionWait), share.go Share (workers shared by consumers,
// by weight or priority), snooze.go Snooze and WithMaxSnoozes, periodic.go periodic jobs
// (Queue.Periodic, Schedule, Every), ratelimit.go WithRateLimit.
//
// The mechanisms behind them are in packages of their own under queue/internal: admin (a
// page's cursor, a filter's page size and age, the batches of the bulk verbs), health (the
// tracking of Reachable from the outcomes of backend calls), jobid (generated job IDs), lease
// (the keeper: a handler's lease timing, and the claims by which renewals act on it),
// periodic (the walk of a schedule's ticks, catch-up, jitter and the enqueue loop), ratelimit
// (a worker's wait for a start from the backend's rate limiter, its job's lease renewed),
// redelivery (the delay before a failed job's next delivery: WithBackoff's rules), share
// (the slot scheduler of a Share), stats (the counters and run distributions behind Stats),
// storable (the bounds of IDs, keys and headers that every backend can store) and version
// (the upgrades and the hand-back record of jobs not understood). The backend contract is in
// queue/driver, the in-memory backend in queue/memory.
