// Package jetstream runs corral's queue on NATS JetStream, for when one process is not enough:
// the same queue.Queue code, with its jobs in a broker that several processes (and a cluster of
// servers) share.
//
//	nc, _ := nats.Connect("nats://127.0.0.1:4222")
//	js, _ := jetstream.New(nc)                  // github.com/nats-io/nats.go/jetstream
//	b, _ := corraljs.New(js, "orders")          // this package
//	defer b.Close()
//	q, _ := queue.New[Order](queue.WithBackend(b), queue.WithCapacity(10_000))
//
// This package lives in its own module, so that users of corral's core never download the
// NATS client.
//
// # How the queue maps onto JetStream
//
// A queue called name is three streams and one durable pull consumer:
//
//   - CORRAL_<name>: the jobs, on subjects corral.<name>.job.<key>.<id>, with work-queue
//     retention (an acked job is deleted). MaxMsgs is the queue's capacity with DiscardNew: the
//     broker refuses a job beyond it, and Enqueue applies the overflow policy (Block polls until
//     the caller's ctx ends; Reject and DropNewest fail at once; DropOldest takes the oldest job
//     waiting for delivery from the consumer, dead-letters it and retries).
//   - CORRAL_<name>_DEAD: the dead letters, each with the payload and the reason, the attempt
//     count and the attempt history in headers.
//   - CORRAL_<name>_STATE: per-job retry state (failed attempts, deliveries that were not
//     attempts) and markers that let Stats count delayed jobs.
//   - the consumer "corral": its AckWait is the lease; InProgress renews it; a failed attempt is
//     a NakWithDelay; a dead letter is published to the dead-letter stream before the job is
//     terminated, so that a crash in between leaves a duplicate dead letter at worst (and the
//     broker deduplicates that for ten minutes), never a lost job.
//
// # What the broker guarantees
//
// Delivery is at least once: a job whose handler succeeded may be handled again if its process
// dies (or loses the broker) before the ack is confirmed, so handlers must be idempotent (the
// job ID is stable). Ack, Nack and dead-lettering wait for the broker's confirmation; a job whose
// process dies is redelivered once its lease has run out.
//
// An ID is taken while its job is stored (a precondition on the job's subject, checked by the
// broker) and, with queue.WithDedupHorizon, for the horizon after its enqueue (the stream's
// duplicate window is set to the horizon, so the promise is the broker's, not an emulation).
// One limit: a job enqueued again with the same ID but another ordering key, after the horizon,
// while the first is still stored, is not detected.
//
// Jobs with an ordering key are handled one at a time, in enqueue order, across all processes:
// a worker handles a keyed job only if it is the oldest stored job of its key, and otherwise
// hands it back to the broker with a short delay (which is not counted as an attempt). A failing
// job holds its key until it is acked or dead-lettered.
//
// A job with a start time (queue.WithDelay, queue.NotBefore) is delivered, handed back with
// NakWithDelay until its time, and then handled; JetStream 2.9 has no scheduled messages.
//
// # Servers
//
// Any nats-server from 2.9.0 with JetStream works (the tests run against 2.14 embedded and
// Debian's 2.9.10). WithReplicas(3) keeps every stream on three servers of a cluster.
//
// # Concurrency
//
// A Backend is safe for concurrent use. It serves one queue.Queue; several processes share a
// queue by each opening a Backend of the same name. Stats counts the jobs prefetched by other
// processes as in flight.
package jetstream
