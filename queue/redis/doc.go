// Package redis is a driver.Backend on Redis Streams (go-redis v9): the queue code runs on it
// unchanged, and every process that opens a Backend with the same name on the same server
// shares the queue's jobs. It is not released yet: its API may still move.
//
//	client := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
//	q, err := queue.New[Email](ctx, queue.WithBackend(redis.New(client, "emails")))
//
// # How the contract maps onto Redis
//
//   - Ready jobs are entries of one stream, read by one consumer group; a job's fields live in
//     a hash of its own, so that a retry or a release adds a new entry and deletes the old one.
//   - A lease is the idle time of the job's pending entry: Extend resets it (XCLAIM), and a
//     Receive takes an entry idle for longer than its lease (XAUTOCLAIM) before new ones. Every
//     delivery has a generation in the job's hash; a settling call of an older delivery fails
//     with queue.ErrLeaseLost.
//   - Ack is XACK and XDEL of the entry and the deletion of the job's hash. Attempts are
//     counted in that hash when a handler starts (Start), never from the stream's delivery
//     counter, and Release gives back an attempt that Start counted. A run whose lease
//     expired gets its history entry (queue.ErrLeaseExpired) when a Receive takes it back.
//     A consumer with no rate limit and no Share receives with ReceiveStart
//     (driver.ReceiveStarter): the receive script counts the attempt as Start would, one
//     round trip for both, and a delivery it does not run (Release, or Bury with no run)
//     gets the attempt back.
//   - Each Backend that receives is one consumer of the group; Close removes it (unless it
//     still holds an entry), and Receive deletes consumers idle for longer than twice the
//     lease (at least ten poll intervals) with no pending entry: a dead process's consumer
//     goes once its jobs were taken back (see Backend.Receive). The group holds the live
//     consumers, not one for every Backend ever opened.
//   - Retry delays and NotBefore go through a sorted set, promoted into the stream by the next
//     Receive, atomically.
//   - Dead letters are a stream of their own, with the reason and the attempt history, at most
//     the queue's dead-letter limit (the oldest are deleted and reported beyond it).
//   - Dedup: an ID is taken while its job is stored and for the dedup horizon after its
//     enqueue (a sorted set of IDs by expiry), checked in the enqueue's own script.
//   - Ordering keys: a list per key in enqueue order; only its first job is ever ready,
//     delayed or leased, so a failing job holds its key until it is acked or dead-lettered.
//   - Capacity is a counter of stored jobs checked in the enqueue's script with the overflow
//     policy (never MAXLEN, which trims silently); DropOldest dead-letters the oldest stored
//     job that is not leased.
//   - Every step that touches more than one key is one Lua script, and every command has a
//     deadline (WithCallTimeout) kept with any client, whatever its options: no answer in
//     time is queue.ErrUnavailable, the caller's ctx ending first is its cause.
//   - Every key of a queue starts with "corral:{name}:", one hash slot (the {name} tag), so a
//     queue's scripts run on one node of a Redis Cluster; spread load over several queues.
//     (The scripts name their keys from that prefix rather than declaring each one: correct on
//     a cluster because all share the slot; the conformance suite passes on a 3-master
//     cluster, and the fault suite on 3 masters with 2 replicas each.)
//   - The Backend's waiting Receive calls share what their looks saw: one of them polls per
//     poll interval, and a worker back from an ack waits without asking while the latest
//     look saw nothing more ready and no call of this Backend readied a job since.
//   - The operator's verbs (driver.Admin, see admin.go): a pause is a key the receive script
//     reads before it takes a job, so it holds in every process once it is set; a cancel
//     buries a waiting job at once and marks one in flight, whose consumer learns it from
//     its next Extend, and which a Nack, a Release or the reclaim of its entry buries. A
//     listing reads every stored job (or dead letter) and pages in the process.
//   - Payload versions (driver.Message.Version) and headers (driver.Message.Headers, a JSON
//     object in the job's hash) are stored with the job and come back from Receive,
//     DeadLetters and Redrive; a job stored before headers has none.
//   - Shared settings (capacity, overflow, dedup horizon, dead-letter limit, the replica
//     count of WithReplicas, the lease) are recorded by the first process to open the queue;
//     another process asking for others fails at Open (or Consume, for the lease), naming
//     the setting and both values.
//
// # What Redis can lose
//
// With appendonly yes and appendfsync always, an acknowledged enqueue or ack survives a
// SIGKILL of redis-server (the tests measure it), and Redis fsyncs it before the reply, so it
// survives a crash of the machine too (Redis's word: no test here crashes a machine). With
// appendfsync everysec Redis may reply before it writes the file (while the previous fsync
// still runs, it postpones the write for up to two seconds): a SIGKILL of the server, or a
// crash of the machine, can lose the writes of those seconds, acknowledged enqueues and acks
// (an ack lost delivers its job again).
// Without the append-only file, a restart loses everything since the last snapshot.
//
// A single server SIGKILLed and restarted on its append-only file, or stopped (SIGSTOP) and
// continued: once it answers again, the queue's consumers ack a job again within two call
// timeouts (WithCallTimeout), the queue's longest receive backoff (5s) and a second, the
// bound the fault suite holds every run to. Calls made while it does not answer fail with
// queue.ErrUnavailable at their deadline (see WithCallTimeout).
//
// Replication is asynchronous: a failover to a replica can lose the writes the replica had
// not applied (the last ones acknowledged before the master died), unless the Backend was
// created WithReplicas, which makes every write wait for that many replicas to confirm it:
// then a failover loses nothing acknowledged. Measured on a cluster of 3 masters with 2
// replicas each, the queue's master SIGKILLed mid-stream: with WithReplicas(1, 1s) no
// acknowledged enqueue lost in 6 runs, the first enqueue acknowledged 4-6s after the kill;
// without it none lost either in those runs on loopback, which nothing promises.
// WithReplicas(n, d) needs n replicas left after a failover: with fewer, every write fails
// with queue.ErrUnavailable (and still takes effect on the master) until a replica is back.
// A server that lost every key of the queue (a replica promoted before it had any, a
// restart without persistence) has no consumer group: the next Receive or Stats records
// again what Open and CheckLease recorded (the stream, its group, the shared settings and the
// lease), and the queue goes on with the jobs enqueued since; what the server lost stays lost.
// [Backend.Losses] counts those recordings, for an operator to see the loss (the queue's
// Health reports it, as queue.Health.Losses).
// A delivery taken before the loss went with it: its Start, Extend and settle calls return
// queue.ErrLeaseLost and write nothing back.
//
// On a ClusterClient, the Backend asks the client to reload the cluster's slots when a node
// cannot be reached, so that a failed-over master is left within seconds, not at the
// client's next periodic reload.
//
// Where things are: redis.go holds the Backend, its options, Open, CheckLease and Close;
// jobs.go the Backend methods on jobs and dead letters; receivers.go Receive and how the
// waiting receivers share their looks; admin.go the operator's verbs (driver.Admin) and
// their scripts; ratelimit.go TakeStart, the rate limit; scripts.go the Lua scripts and the
// key layout; internal/redistest starts throwaway servers and clusters for the tests.
package redis
