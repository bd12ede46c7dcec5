// Package jetstream runs corral's queue on NATS JetStream, for when one process is not enough:
// the same queue.Queue code, with its jobs in a broker that several processes (and a cluster of
// servers) share.
//
//	nc, _ := nats.Connect("nats://127.0.0.1:4222")
//	js, _ := jetstream.New(nc)                  // github.com/nats-io/nats.go/jetstream
//	b := corraljs.New(js, "orders")             // this package: no I/O, no error
//	q, err := queue.New[Order](ctx, queue.WithBackend(b), queue.WithCapacity(10_000))
//	defer q.Close(ctx)                          // closes b too: the queue owns it
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
//     attempts, snoozes) and markers that let Stats count delayed jobs; one record per unique
//     key (queue.WithUnique: its holder, and the end of its period once the holder left), and
//     the rate limit's window (queue.WithRateLimit: the starts taken, dated by the clock of
//     the process that took each, so the limit is off by the processes' clock skew), each
//     written compare-and-set. A unique key whose holder's process died between the job's
//     removal and the record's update is freed at the next claim, without its period.
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
// Every request to the broker has a deadline (WithCallTimeout, 5s by default): a reply lost
// with a server (killed, failed over, or paused) becomes an error matching queue.ErrUnavailable
// and a retry, never a stuck worker, and the consumers recover by themselves once the broker
// serves again (see queue/queuetest.Faults.RecoveryBound for the bound the tests hold them to).
// An Enqueue that fails with queue.ErrUnavailable may have stored the job: enqueue it again
// with the same ID, and queue.ErrDuplicate then means it was.
//
// An attempt is a handler run: a job's attempts are counted in its state record when a handler
// starts (Start), so a job a dead process had prefetched comes back with its attempts unspent, and
// a job whose handler kills its process is dead-lettered after queue.WithMaxAttempts runs. The
// state record is written compare-and-set: a job is not started twice at once, even by a server
// that lost its consumer's state in a crash.
//
// An acked or dead-lettered job never comes back: nats-server 2.9 can lose, in a SIGKILL, the
// removals it had made from a work-queue stream, and the backend finds such jobs from its own
// records (the consumer's ack floor, the dead letters, and on servers older than 2.10 a
// tombstone per acked job, kept ten minutes) and removes them, at the head of an ordering key,
// among the deliveries after a reconnection, and in Stats. A job acked in the instant the
// server crashed may still be handled once more: a duplicate handling, as at-least-once allows.
//
// A job the consumer lost track of before it started is delivered again: a 2.9 consumer can skip
// a job in a leader change, or keep counting as ack pending a job it no longer has. When the
// consumer has nothing ack pending, or delivered nothing for two leases while workers wait, and
// the process saw every request answered for two leases and no reconnection for four, the
// backend publishes again each stored job it has delivered that was neither settled, started,
// nor held for a start (a delivery waiting for a rate limit's start or a Share's slot has a
// state record from its first Extend), and, in the second case, not handed back with a delay
// either; the later jobs of its ordering key follow it, in order. It then deletes the job at its
// old place; Backend.Requeued counts them. It looks in Stats, and in a Receive that waited a
// call timeout, at most once per lease.
//
// An ID is taken while its job is stored (a precondition on the job's subject, checked by the
// broker) and, with queue.WithDedupHorizon, for the horizon after its enqueue (the stream's
// duplicate window is set to the horizon, so the promise is the broker's, not an emulation).
// One limit: a job enqueued again with the same ID but another ordering key, after the horizon,
// while the first is still stored, is not detected.
//
// The settings that every process shares (capacity, overflow, dedup horizon, dead-letter limit,
// replicas, storage, and the consumers' lease) are recorded by the first process that opens
// the queue; Open (and Consume, for the lease) fails in a process that asks for others, with an
// error naming the setting and both values. WithReconfigure changes them deliberately.
//
// Dead letters are kept up to the queue's dead-letter limit (queue.WithDeadLetterLimit); beyond
// it the oldest is deleted by the backend, and reported, never trimmed silently by the broker.
//
// Jobs with an ordering key are handled one at a time, in enqueue order, across all processes:
// a worker handles a keyed job only if it is the oldest stored job of its key, and otherwise
// hands it back to the broker with a short delay (which is not counted as an attempt). A failing
// job holds its key until it is acked or dead-lettered.
//
// A job with a start time (queue.WithDelay, queue.WithNotBefore) is delivered, handed back with
// NakWithDelay until its time, and then handled; JetStream 2.9 has no scheduled messages.
//
// # What a job costs
//
// A job handled at its first delivery costs four requests to the broker (besides the pulls that
// fetch jobs in batches, and a read of the pause record at most once per PauseWithin), on every
// server version: its publish (Enqueue), and, on the worker's path, the state record written
// compare-and-set as its handler starts (Start) and the confirmed ack (Ack); then the record's
// removal. On a queue whose state stream allows per-message TTLs (one made on nats-server 2.11
// or later, or opened there with WithReconfigure) the removal is a publish that Ack makes
// itself without waiting for an answer: an empty record in the record's place, which the
// server deletes a second later (Close publishes one more and waits for its answer: the server
// stores one connection's messages to a stream in order). On any other it is a purge of the
// record's subject, a JetStream API request, made in the background after the ack, off the
// worker's path. Close waits for the removals within its ctx (see Backend.Close); a
// process that dies first leaves the records of its last acked jobs in CORRAL_<name>_STATE,
// where nothing reads them, until Delete. On a server older than 2.10 the background work
// writes the job's tombstone first (see above), a fifth request. A redelivered job reads its
// record as it is delivered, and a job with an ordering key reads the head of its key. On a
// queue of one replica, for four leases after a reconnection, Ack waits for the removal, and
// Start and Ack check the work stream (a request each), so that a server that lost its
// consumer's state cannot make a job run twice. On a queue replicated on a 2.9 server, for four
// leases after the broker failed to answer or the consumer changed leaders, Ack writes the job's
// tombstone before it returns, every delivered job is checked against the tombstones and dead
// letters, and Start checks that the work stream's leader holds no other job at its sequence
// before it writes its record, and looks for the job's tombstone once it has (a request each),
// so that a consumer leader that was paused, and goes on delivering from its old state for a
// moment when it continues, does not run again a job acked in that time (by another process,
// once that process's background work has written the tombstone), and a consumer led from a
// replica that numbered jobs differently does not have a job run at another job's sequence,
// whose ack would remove that other job (the burial of a job not started checks its sequence
// too).
//
// # Operating the queue
//
// The Backend implements driver.Admin, so queue.Queue's Jobs, Count, Inspect, Cancel, Pause,
// Resume and the bulk verbs work on it, from any process of the queue. A pause is a record in
// CORRAL_<name>_STATE that every Receive reads before it hands out a job: once Pause returns, no
// consumer of any process starts a job (running ones finish), until Resume; a resumed consumer
// starts jobs again within about half a second. A cancel is written into the job's state
// record: a waiting job is dead-lettered at once, with queue.ReasonCanceled; a running job's
// consumer finds the cancel at its next lease renewal (within half the lease, plus a request),
// cancels its handler's context with queue.ErrCanceled and dead-letters it. A listing reads the
// streams (a request per stored job, or per dead letter) and pages in this process: it suits an
// operator, not a loop.
//
// # Servers
//
// Any nats-server from 2.9.0 with JetStream works; the tests run against Debian's 2.9.10
// processes, one server and a cluster of three. WithReplicas(3) keeps every stream on three
// servers of a cluster. Give the NATS connection a short ping interval (nats.PingInterval of a
// second or two): a server that stalls without closing its connections is otherwise left for
// another only after minutes.
//
// What survives a process: everything the queue stores. Every stored job (ready, delayed, in
// flight: redelivered when its lease ends) and every dead letter is kept by the servers, on
// disk (in their memory with WithMemoryStorage, lost when they restart), for the next process
// that opens a queue of the same name. Closing the queue (queue.Queue's Close, which closes
// the Backend) deletes nothing; Delete does.
//
// Bad input panics, naming the package and the call: New with a nil JetStream, an invalid
// name or a nil option, an option with an impossible setting (WithReplicas(0)), and every
// method of a zero Backend, whatever its arguments ("jetstream: zero Backend: use
// jetstream.New").
//
// # Concurrency
//
// A Backend is safe for concurrent use. It serves one queue.Queue; several processes share a
// queue by each opening a Backend of the same name. Stats counts the jobs prefetched by other
// processes as in flight.
package jetstream

// Layout: jetstream.go the Backend, New, options, Close; open.go and settings.go Open, streams,
// shared settings, Open's retries; enqueue.go Enqueue, DropOldest; receive.go Receive, the
// prefetch pump; settle.go Start to Bury; aftermath.go what follows an ack, in the background;
// state.go job state, markers; unique.go the unique keys; ratelimit.go TakeStart, the rate
// limit; admin.go the operator's verbs (driver.Admin): list, get, cancel, pause; dead.go,
// stats.go, resurrect.go, blind.go (a consumer led from a replica that missed jobs), message.go;
// errors.go the requests' deadlines, the broker's errors and the purge of a subject.
