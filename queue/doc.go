// Package queue is a job queue: producers enqueue immutable payloads with a
// stable ID; a bounded set of workers handles them; the queue acks,
// redelivers with backoff, and dead-letters. Every state a job can be in is
// explicit and visible: stored (ready, delayed, in flight), acked, or dead
// with a reason and its attempt history.
//
//	q, err := queue.New[Email](queue.WithCapacity(10_000), queue.WithOverflow(queue.Reject))
//	...
//	id, err := q.Enqueue(ctx, Email{To: "ada@example.com"}, queue.WithKey("ada@example.com"))
//	if errors.Is(err, queue.ErrFull) { /* shed load */ }
//
//	c, err := q.Consume(ctx, func(ctx context.Context, job queue.Job[Email]) error {
//		return send(ctx, job.Payload) // nil acks; an error retries with backoff
//	}, queue.Workers(8), queue.MaxAttempts(5))
//	...
//	report, err := c.Close(shutdownCtx) // drains; what is left stays queued
//
// # Guarantees
//
//   - Enqueue is bounded: a capacity and an [Overflow] policy (Block, Reject,
//     DropNewest, DropOldest). A job evicted by DropOldest goes to the dead
//     letters with [ReasonOverflow]; nothing is dropped silently.
//   - An ID enqueued again while its job is stored, or within the dedup
//     horizon ([WithDedupHorizon]), is not stored twice: Enqueue returns
//     [ErrDuplicate].
//   - A handler returning nil acks its job. An error redelivers it after the
//     consumer's backoff delay, without holding a worker while it waits.
//     An error marked permanent (retry.Permanent), a panic, or a failure of
//     the last allowed attempt dead-letters it.
//   - A handler that runs past its lease has its context cancelled with
//     cause [ErrLeaseExpired] and its job is redelivered (the attempt is
//     spent). A job is never in flight twice at once: while its handler
//     runs, the consumer renews the job's lease in the backend.
//   - Every goroutine has an owner: [Consumer.Close] returns only after every
//     handler has returned (at its deadline it cancels them, then still
//     waits), so a handler must return once its context is done.
//   - Jobs with the same ordering key ([WithKey]) are handled one at a time
//     in enqueue order. A failing job holds its key, through its retry
//     delays, until it is acked or dead-lettered; other keys run in parallel.
//   - Accounting: every accepted job ends acked, dead-lettered, or still
//     stored in the backend. [Consumer.Close] reports what happened during
//     the drain; jobs it did not finish stay in the backend for the next
//     consumer of the same queue.
//
// # Backends
//
// A [Backend] stores the jobs. [Memory] (the default) keeps them in process;
// queue/jetstream keeps them in NATS JetStream. Every backend passes the
// conformance suite in queue/queuetest. Payloads cross a byte backend through
// the queue's [Codec]; the in-memory backend passes the values themselves,
// so a payload must not be mutated after Enqueue.
//
// # Time
//
// Delays, leases, start-by deadlines and the dedup horizon use the time
// package, so a queue with the in-memory backend created inside a
// testing/synctest bubble runs on the bubble's virtual clock.
package queue
