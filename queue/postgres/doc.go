// Package postgres runs corral's queue in the PostgreSQL database a service already has: the
// same queue.Queue code as with any backend, plus the two things only a database backend can
// give, a job enqueued in the caller's transaction (EnqueueTx: visible at the commit, gone on
// rollback) and a job completed in the handler's transaction (AckTx: the handler's writes and
// the ack commit together).
//
//	pool, _ := pgxpool.New(ctx, "postgres://...")  // github.com/jackc/pgx/v5/pgxpool
//	_ = postgres.Migrate(ctx, pool)                // once; or MigrationSQL for your own tool
//	b := postgres.New(pool, "emails")              // no I/O, no error
//	q, err := queue.New[Email](ctx, queue.WithBackend(b))
//	defer q.Close(ctx)                             // closes b; the pool stays yours
//
// This package lives in its own module, so that users of corral's core never download a
// database driver.
//
// EnqueueTx and AckTx take a Tx: a pgx.Tx, or a database/sql transaction wrapped by SQLTx,
// with the same guarantees (see SQLTx for what a database/sql driver must carry). The backend
// itself always runs on a pgxpool.Pool.
//
// # Files
//
// postgres.go holds the Backend, its options, Open and Close; schema.go and migrations/ the
// schema; sql.go every statement; enqueue.go, receive.go, settle.go and dead.go the queue
// contract (group.go makes the Start and Ack calls of many workers one query; unique.go the
// unique keys, ratelimit.go TakeStart, the rate limit); headers.go how job headers are stored;
// listen.go the notifications; tx.go Tx, SQLTx, EnqueueTx and AckTx; batch.go EnqueueBatch and
// EnqueueBatchTx; settings.go the settings the processes of a queue share; errors.go how errors
// map to queue.ErrUnavailable; admin.go the operator's verbs (driver.Admin).
//
// # How the queue maps onto tables
//
// The tables live in one schema (DefaultSchema, or WithSchema: two applications sharing a
// database each take their own), made by Migrate from versioned migrations embedded in the
// package; Open refuses a schema that lacks one, with a *SchemaError naming it:
//
//   - queues: a row per queue, with the settings its processes share (capacity, overflow,
//     dedup horizon, dead-letter limit, lease), recorded by the first process that opens the
//     queue and checked by every other (a difference fails Open, naming the setting and both
//     values, unless WithReconfigure), and the counts of stored jobs (kept while there is a
//     capacity) and of dead letters.
//   - jobs: a row per stored job, numbered in enqueue order, with its payload version
//     (driver.Message.Version), its headers (a JSON object, NULL for none), its lease (number, end), its attempts (handler runs, counted by
//     Start) and its history of failed attempts.
//   - ids: the IDs enqueued within the dedup horizon, of a queue that has one.
//   - dead: the dead letters, one per ID, in burial order, with their payload version and
//     headers (which Redrive keeps), reason and history.
//
// Receive leases the first job, in enqueue order, that is due and is the first stored job of
// its ordering key, with SELECT ... FOR UPDATE SKIP LOCKED: any number of receivers, in any
// number of processes, never take a job twice and never wait for each other's locks. The
// receivers of one Backend take turns: one query at a time leases jobs for all the receivers
// that asked meanwhile, so that many workers make few queries; a job leased for a receiver
// that left meanwhile is given back at once, as if never delivered. A job with a key waits for
// the key's jobs enqueued before it to be gone (acked or dead), so a failing job holds its key
// through its retries; keyed enqueues take the key's advisory lock to the end of their
// transaction, so that a key's jobs are numbered in commit order (an enqueue that finds it
// held waits for it within its ctx: see Backend.Enqueue). Every claim query first takes back
// the leases that ended, whether or not other jobs are ready: while a receiver of the queue is
// free to take a job, a job whose worker died is ready again within the poll interval
// (WithPollInterval, 1s) of its lease's end, and delivered in its enqueue order. Each Receive,
// Nack, Release and expiry gives the job a new lease number: a call of a stale delivery fails with
// queue.ErrLeaseLost and changes nothing.
//
// Receivers wait for LISTEN/NOTIFY: every statement that stores a job or makes one ready
// notifies the schema's channel in its transaction (so EnqueueTx wakes them at the commit),
// on a connection the backend makes for it from the pool's configuration. A waiting receiver
// also wakes at the next due time of a delayed job or lease, and after the poll interval at
// most (WithPollInterval, 1s): no busy loop when idle. When the listening connection drops,
// the backend reconnects and wakes every receiver, which look at the table again: no wake-up
// is lost.
//
// # Operating a queue
//
// The Backend implements driver.Admin, behind queue.Queue's Jobs, Inspect, Cancel, Pause and
// Resume and the bulk verbs, for every process of the queue at once. A pause is a flag on
// the queue's row that every claim reads in the statement that claims: once Pause has
// returned, no receiver in any process takes a job until Resume (which notifies them). A
// cancel of a waiting job moves it to the dead letters in the same call; a job in flight is
// marked, its consumer learns it from its next lease renewal, Extend's answer (within half the
// consumer's lease, see queue.WithLease), and cancels its handler; if the process running it
// died, the Receive that takes its lease back buries it, and no claim delivers it meanwhile.
// Listings are ordered by enqueue time, then ID (byte order), and read the tables directly.
//
// # What survives what
//
// Everything the queue stores is in the database: a process's exit or crash loses nothing (a
// job it was handling comes back when its lease ends, with the attempt spent if its handler had
// started; a job it had received but not started comes back with its attempt unspent), and a
// server crash loses nothing the server acknowledged. Every query has a deadline
// (WithCallTimeout, 5s by default): a server that is down, restarting, paused or that drops the
// connection (pg_terminate_backend) makes calls fail with an error matching
// queue.ErrUnavailable, and the consumers carry on by themselves once it answers again: a server
// killed and restarted, or paused and continued, sees its consumers ack again within two call
// timeouts (a query lost with the server, then the retry), plus 5s (the longest pause of a
// consumer between its tries of a failing Receive), plus the poll interval (a receiver waiting
// for a notification that was lost with the listening connection) of answering again. An
// Enqueue that fails so may have stored the job: enqueue again with the same ID, and
// queue.ErrDuplicate then means it was. An ack whose answer was lost may have committed: its
// job is then gone, or else comes back at the end of its lease.
//
// # What is exactly once
//
// Delivery is at least once: a handler must be idempotent, or do its work in the database with
// AckTx. With AckTx, of all the runs of a job exactly one commits its transaction, and the
// job's removal with it; what a handler does outside its transaction happens once per run.
// See AckTx for the details, and EnqueueTx for what a transactional enqueue holds.
//
// Times are the database server's (now()) for leases, delays and the horizon, and stored to
// the microsecond.
package postgres
