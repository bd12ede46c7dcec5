package jetstream

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
)

// Backend is a driver.Backend on NATS JetStream. Pass it to queue.New with queue.WithBackend.
//
// One Backend serves one queue.Queue in one process; several processes (each with its own
// Backend and Queue of the same name) share the queue's jobs. A Backend is safe for concurrent
// use. Its own goroutines make only what follows an ack (see Ack), and end when that is done;
// the NATS client pulls messages in the background once a consumer receives. The queue's Close
// closes the Backend (the queue owns it), which stops the pulls and waits, within its ctx, for
// what follows the acks; the requests it then abandons end within a call timeout, and Delete
// waits for them. Make one with New: a method of a zero Backend panics at once, whatever its
// arguments ("jetstream: zero Backend: use jetstream.New").
type Backend struct {
	js   natsjs.JetStream
	nc   *nats.Conn
	name string
	o    options

	// Names, fixed by New.
	workStream, deadStream, stateStream, doneStream, consumerName string
	jobPrefix, deadPrefix, statePrefix, markPrefix, donePrefix    string

	// life is whether the backend is open; its Open is held across Open's requests, so that
	// a second Open waits for the first, and no other call does. Open sets cfg, work, dead,
	// done, tombstones and state once, under mu, before it marks the backend opened; the
	// calls that found it opened (life.Check, pumpFor) read them without mu.
	life driver.Lifecycle
	// pumpMu serialises the starts of the prefetch pump and the changes of the lease, and is
	// held across their requests (see pumpFor). It is taken before mu, never while holding it.
	pumpMu sync.Mutex

	// mu guards the fields below. It is held for a few instructions, never across a request
	// to the broker: every Enqueue and Receive takes it. It is taken before life's lock.
	mu   sync.Mutex
	cfg  driver.Config
	set  settings // the queue's shared settings, as agreed at Open and CheckLease
	work natsjs.Stream
	dead natsjs.Stream
	done natsjs.Stream // nil unless tombstones
	// tombstones says the server is older than 2.10: Ack records each acked job (see
	// resurrect.go).
	tombstones bool
	// lateNak is the delay of the NAKs that hand back prefetched messages (see release): two
	// heartbeats of the pull on a server older than 2.10.16, else 0 (see drainPump).
	lateNak time.Duration
	// recordTTL says the state stream allows per-message TTLs (nats-server 2.11 or later):
	// dropState replaces a record by an empty one that the server removes by itself.
	recordTTL  bool
	state      natsjs.Stream
	cons       natsjs.Consumer // replaced by pumpFor when the lease changes
	lease      time.Duration   // the consumer's AckWait; 0 until the first Receive
	pump       *pump           // nil until the first Receive and after the pump stopped
	leaderSeen string          // the consumer's leader in the last info read (see noteLeader)
	// receivers counts Receive calls waiting on pump.
	receivers int

	bufFresh atomic.Int64 // prefetched first deliveries, not yet handed out (for Stats)

	// See suspect: the reconnections last seen, and until when deliveries are checked.
	reconnSeen   atomic.Uint64
	suspectUntil atomic.Int64
	resurrected  atomic.Uint64 // settled jobs found back and removed
	requeued     atomic.Uint64 // jobs the consumer skipped, published again (see requeue)
	stepDowns    atomic.Uint64 // consumer leader step-downs asked for (see blind, misnumbered)
	misDown      atomic.Int64  // when misnumbered last asked for a step-down (Unix ns)
	// See stalled: the consumer's count of deliveries last seen, since when, and when a
	// stalled consumer's jobs may be looked at next; see blind. Guarded by statsMu.
	stallSeq    uint64
	stallSince  time.Time
	stallNext   time.Time
	blindSince  time.Time // see blind
	blindSeen   time.Time
	blindSeq    uint64
	blindNext   time.Time
	tidyAt      atomic.Int64 // when (UnixNano) an idle Receive may tidy next (see tidyIdle)
	pauseSeen   atomic.Bool  // a Receive found the queue paused (see holdWhilePaused)
	runningSeen atomic.Int64 // when (UnixNano) a read of the pause record found none (see pausedNow)

	// See staleRun: the last time (UnixNano) this backend saw the broker fail to answer, or
	// the consumer change leaders.
	unrest atomic.Int64
	// shaken is unrest as this backend saw it, not counting Open (see suspect).
	shaken atomic.Int64

	// Info requests update the cached info of the handle they are made on, which the
	// client reads unsynchronised in other requests: Stats uses handles of its own.
	statsMu                       sync.Mutex
	statWork, statDead, statState natsjs.Stream
	statCons                      natsjs.Consumer

	after aftermath // the work that follows acks (see aftermath.go)

	onTake func() // test hook: called as a Receive takes a prefetched message (see takeFor)
}

// Option configures a Backend in New. Every option is named With<Setting>; an option given a
// setting no backend can honour panics when it is called, and a nil Option makes New panic.
type Option interface{ apply(*options) }

type options struct {
	replicas    int
	memory      bool
	prefetch    int
	callTimeout time.Duration
	reconfigure bool
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithReplicas sets how many servers of a NATS cluster keep each of the queue's streams (1 by
// default). Use 3 in production clusters. It panics if n < 1.
func WithReplicas(n int) Option {
	if n < 1 {
		panic("jetstream: WithReplicas(" + strconv.Itoa(n) + "): need at least 1")
	}
	return optionFunc(func(o *options) { o.replicas = n })
}

// WithMemoryStorage keeps the queue's streams in the servers' memory instead of on disk: faster,
// and lost when the servers restart.
func WithMemoryStorage() Option { return optionFunc(func(o *options) { o.memory = true }) }

// WithPrefetch sets how many jobs this process asks the broker for ahead of its workers (8 by
// default). A prefetched job's lease is restarted when a worker takes it, but a job that waits
// in the prefetch buffer longer than the lease is redelivered: keep n near the number of
// workers. It panics if n < 1.
func WithPrefetch(n int) Option {
	if n < 1 {
		panic("jetstream: WithPrefetch(" + strconv.Itoa(n) + "): need at least 1")
	}
	return optionFunc(func(o *options) { o.prefetch = n })
}

// WithCallTimeout bounds every request the backend makes to the broker (5s by default). A
// request not answered within d fails with an error matching queue.ErrUnavailable, so that a
// reply lost with a server (killed, failed over or paused) becomes an error and a retry, never
// a stuck worker. Keep d well above the broker's latency and below the consumers' lease. It
// panics if d is not positive.
func WithCallTimeout(d time.Duration) Option {
	if d <= 0 {
		panic("jetstream: WithCallTimeout(" + d.String() + "): need a positive timeout")
	}
	return optionFunc(func(o *options) { o.callTimeout = d })
}

// WithReconfigure lets Open (and CheckLease) replace the queue's shared settings (capacity,
// overflow, dedup horizon, dead-letter limit, replicas, storage, and the lease) with this
// process's, instead of failing on a difference. Use it for a deliberate change, with every
// other process of the queue stopped. On nats-server 2.11 or later it also lets Open allow
// per-message TTLs on a state stream made without them (see "What a job costs"): the server
// does not let them be turned off again, so corral versions before v0.3.0, whose Open asks
// for them off, can no longer open the queue.
func WithReconfigure() Option { return optionFunc(func(o *options) { o.reconfigure = true }) }

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// New returns a Backend for the queue called name (letters, digits, '-' and '_'), whose jobs
// live in the stream CORRAL_<name> under the subjects corral.<name>.job.>, whose dead letters
// live in CORRAL_<name>_DEAD under corral.<name>.dead.>, and whose per-job retry state lives in
// CORRAL_<name>_STATE. Streams and the durable consumer "corral" are created (or updated) when
// the queue opens the backend (queue.New, with its ctx).
//
// New does no I/O, so it cannot fail for want of a broker: it returns no error, and panics on
// what is a mistake in the program: a nil js, an invalid name, a nil option.
func New(js natsjs.JetStream, name string, opts ...Option) *Backend {
	if js == nil {
		panic("jetstream: New(nil, " + strconv.Quote(name) + "): nil JetStream")
	}
	if !validName.MatchString(name) {
		panic("jetstream: New(js, " + strconv.Quote(name) + "): invalid queue name (want 1-64 of [A-Za-z0-9_-])")
	}
	o := options{replicas: 1, prefetch: 8, callTimeout: 5 * time.Second}
	for _, opt := range opts {
		if opt == nil {
			panic("jetstream: nil option")
		}
		opt.apply(&o)
	}
	b := &Backend{
		js: js, nc: js.Conn(), name: name, o: o,
		workStream:   "CORRAL_" + name,
		deadStream:   "CORRAL_" + name + "_DEAD",
		doneStream:   "CORRAL_" + name + "_DONE",
		donePrefix:   "corral." + name + ".done.",
		stateStream:  "CORRAL_" + name + "_STATE",
		consumerName: "corral",
		jobPrefix:    "corral." + name + ".job.",
		deadPrefix:   "corral." + name + ".dead.",
		statePrefix:  "corral." + name + ".state.",
		markPrefix:   "corral." + name + ".mark.",
	}
	b.life.Init()
	return b
}

var _ driver.Backend = (*Backend)(nil)

// token encodes s as one NATS subject token (base64url). The empty string, which has no key,
// is "_", which no non-empty string encodes to.
func token(s string) string {
	if s == "" {
		return "_"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func (b *Backend) jobSubject(key, id string) string {
	return b.jobPrefix + token(key) + "." + token(id)
}
func (b *Backend) keySubjects(key string) string { return b.jobPrefix + token(key) + ".*" }

// Delete deletes the queue from the servers: its streams, with every job, dead letter and
// retry state in them. Every Backend of the queue, in every process, must be closed first (by
// its queue's Close). It first waits for the requests that this Backend's Close cancelled
// (see Close), and returns context.Cause(ctx) if ctx ends before they end.
func (b *Backend) Delete(ctx context.Context) error {
	calls.Made(b.js != nil)
	if err := b.after.wait(ctx); err != nil {
		return err
	}
	for _, name := range []string{b.workStream, b.deadStream, b.stateStream, b.doneStream} {
		if err := b.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, natsjs.ErrStreamNotFound) {
			return fmt.Errorf("jetstream: delete stream %s: %w", name, err)
		}
	}
	return nil
}

// Close implements driver.Backend: it stops receiving, and the jobs prefetched but not handed to
// a worker go back to the broker; a Receive waiting then returns queue.ErrClosed, as do later
// calls. It deletes nothing (every stored job and dead letter stays on the servers: see
// Delete) and does not close the NATS connection. If ctx ends before the prefetched jobs are
// handed back, Close returns context.Cause(ctx), and those jobs come back when their lease
// ends. Close also waits for the removals of the state records of acked jobs (and their
// tombstones on a 2.9 server), which Ack leaves to the background; on a state stream with
// per-message TTLs, where Ack publishes the removals without waiting for answers, it waits for
// the answer to one more (if the client is connected): a removal lost on the way, which no
// answer reports, leaves a record that nothing reads again. If ctx ends first, it
// returns context.Cause(ctx), the removals not started are not made (as when a process dies:
// such a record is never read again), and the requests running are cancelled: each ends when
// its request returns, within one call timeout (WithCallTimeout); Delete, or a later Close,
// waits for them. queue.Queue's Close calls it; Close is idempotent: a later call waits for the
// requests an earlier one cancelled, and returns nil, or context.Cause(ctx) if ctx ends first.
func (b *Backend) Close(ctx context.Context) error {
	calls.Made(b.js != nil)
	if first, _ := b.life.Close(); !first {
		return b.after.wait(ctx)
	}
	b.mu.Lock()
	p := b.pump
	b.pump = nil
	b.mu.Unlock()
	if p != nil {
		b.stopPump(ctx, p)
	}
	b.after.close(ctx, b.confirmDrops)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}
