package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/corral-go/corral/queue/driver"
)

// Backend is a driver.Backend on PostgreSQL. Pass it to queue.New with queue.WithBackend.
//
// One Backend serves one queue.Queue in one process; several processes (each with its own
// Backend and Queue of the same name, on the same database and schema) share the queue's jobs.
// A Backend is safe for concurrent use. Once opened it runs a goroutine of its own, which
// listens for the queue's notifications on a connection of its own (not one of the pool's),
// and, while receivers wait, another that claims jobs for them (see Receive); Close, which
// the queue's Close calls, stops them and waits for them. Make one with New: a method of a
// zero Backend panics at once, whatever its arguments ("postgres: zero Backend: use
// postgres.New").
type Backend struct {
	pool    *pgxpool.Pool
	name    string
	o       options
	sql     statements
	channel string // the schema's notification channel; the payload is the queue's name

	rateRowMade atomic.Bool // the queue's row of the table rates exists (see TakeStart)

	// life is whether the backend is open. Open sets cfg and set once, before it marks the
	// backend opened; the calls that found it opened (life.Check) read them without mu.
	life    driver.Lifecycle
	closing <-chan struct{} // life's, closed by Close

	// mu guards the fields below. It is held for a few instructions, never across a query.
	mu  sync.Mutex
	cfg driver.Config
	set settings

	wake       signal // wakes waiting receivers (see receive.go)
	stopListen context.CancelFunc
	listenDone chan struct{} // closed when the listener has returned

	reconnects atomic.Uint64 // the listener's connections after its first
	listening  atomic.Bool   // the listener has a connection that LISTENs

	running runningJobs // the deliveries started in this process, for AckTx

	// claimMu guards the claims of the receivers (see claim) and the fields below.
	claimMu   sync.Mutex
	claimQ    []*claimReq   // the requests waiting for the claimer, oldest first
	claiming  bool          // a claimer runs
	claimExit chan struct{} // closed by the claimer that runs, when it returns
	claimStop bool          // set by Close: no more claims
	onQueued  func()        // tests: called (under claimMu) when a request waits for the claimer
	onLeft    func()        // tests: called (under claimMu) when a receiver leaves its request in flight

	starts, acks group // the Start and Ack calls made together (see group)
}

// Option configures a Backend in New (and the schema of Migrate and MigrationSQL). Every
// option is named With<Setting>; an option given a setting no backend can honour panics when
// it is called, and a nil Option makes New panic.
type Option interface{ apply(*options) }

type options struct {
	schema       string
	callTimeout  time.Duration
	pollInterval time.Duration
	reconfigure  bool
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func newOptions(opts []Option) options {
	o := options{schema: DefaultSchema, callTimeout: 5 * time.Second, pollInterval: time.Second}
	for _, opt := range opts {
		if opt == nil {
			panic("postgres: nil option")
		}
		opt.apply(&o)
	}
	return o
}

// WithSchema keeps the queue tables in the schema called name (DefaultSchema, "corral", without
// it): two applications sharing a database each give their own, and Migrate makes each. The
// name is 1 to 48 lower-case letters, digits and underscores, not starting with a digit; any
// other panics.
func WithSchema(name string) Option {
	if !validSchema.MatchString(name) {
		panic("postgres: WithSchema(" + strconv.Quote(name) + "): want 1-48 of [a-z0-9_], not starting with a digit")
	}
	return optionFunc(func(o *options) { o.schema = name })
}

// WithCallTimeout bounds every query the backend makes (5s by default). A query not answered
// within d fails with an error matching queue.ErrUnavailable, so that a server that died or
// stalls becomes an error and a retry, never a stuck worker. Keep d well above the server's
// latency and below the consumers' lease. It panics if d is not positive.
func WithCallTimeout(d time.Duration) Option {
	if d <= 0 {
		panic("postgres: WithCallTimeout(" + d.String() + "): need a positive timeout")
	}
	return optionFunc(func(o *options) { o.callTimeout = d })
}

// WithPollInterval bounds how long a waiting Receive goes without looking at the table (1s by
// default). Receivers are woken by notifications (LISTEN/NOTIFY) when a job is stored or
// becomes ready, and at the time the next delayed job is due or lease ends; the poll is the
// fallback for a notification lost with the listening connection. It panics if d is not
// positive.
func WithPollInterval(d time.Duration) Option {
	if d <= 0 {
		panic("postgres: WithPollInterval(" + d.String() + "): need a positive interval")
	}
	return optionFunc(func(o *options) { o.pollInterval = d })
}

// WithReconfigure lets Open (and the consumers' lease check) replace the queue's shared
// settings (capacity, overflow, dedup horizon, dead-letter limit, and the lease) with this
// process's, instead of failing on a difference. Use it for a deliberate change, with every
// other process of the queue stopped.
func WithReconfigure() Option { return optionFunc(func(o *options) { o.reconfigure = true }) }

// New returns a Backend for the queue called name (1 to 200 bytes) whose jobs live in the
// tables of the schema (see WithSchema) in the database of pool, which Migrate makes. The
// queue's row is created, or its settings checked, when the queue opens the backend
// (queue.New, with its ctx).
//
// New does no I/O, so it cannot fail for want of a server: it returns no error, and panics on
// what is a mistake in the program: a nil pool, an empty or too long name, a name Postgres
// cannot store as text (invalid UTF-8, or a NUL byte), a nil option. The
// pool stays the caller's: Close does not close it.
func New(pool *pgxpool.Pool, name string, opts ...Option) *Backend {
	if pool == nil {
		panic("postgres: New(nil, " + strconv.Quote(name) + "): nil pool")
	}
	if name == "" || len(name) > 200 {
		panic("postgres: New(pool, " + strconv.Quote(name) + "): want a queue name of 1 to 200 bytes")
	}
	if !storable(name) {
		panic("postgres: New(pool, " + strconv.Quote(name) + "): the queue name must be UTF-8 without NUL bytes: Postgres cannot store it")
	}
	o := newOptions(opts)
	b := &Backend{
		pool: pool, name: name, o: o, sql: newStatements(o.schema),
		channel: "corral_" + o.schema,
	}
	b.life.Init()
	b.closing = b.life.Closing()
	b.starts = group{run: b.startMany, call: b.call}
	b.acks = group{run: b.ackMany, call: b.call}
	return b
}

var (
	_ driver.Backend     = (*Backend)(nil)
	_ driver.SharedLease = (*Backend)(nil)
	_ driver.Reconnecter = (*Backend)(nil)
)

// Open implements driver.Backend: it checks the schema (a *SchemaError names the migration to
// run), then agrees the queue's shared settings with the other processes (the first process
// to open the queue records them; a later one with other settings fails, naming the setting
// and both values, unless WithReconfigure), and starts listening for the queue's
// notifications.
func (b *Backend) Open(ctx context.Context, cfg driver.Config) error {
	calls.Made(b.pool != nil)
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, cancel := calls.Context(ctx, 2*b.o.callTimeout)
	defer cancel()
	return b.life.Open(calls, func() error { return b.open(ctx, cfg) })
}

// open is Open's setting up, run by b.life.
func (b *Backend) open(ctx context.Context, cfg driver.Config) error {
	if err := checkSchema(ctx, b.pool, b.o.schema); err != nil {
		var se *SchemaError
		if errors.As(err, &se) {
			return err
		}
		return calls.Fail(ctx, "check the schema", err)
	}
	set, err := b.agree(ctx, settingsFor(cfg))
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.closing: // Close has taken (under mu) no listener to stop: start none
		return driver.ErrClosed
	default:
	}
	b.cfg, b.set = cfg.WithDefaults(), set
	lctx, stop := context.WithCancel(context.Background())
	b.stopListen, b.listenDone = stop, make(chan struct{})
	go b.listen(lctx) // owned by b: Close stops it and waits through listenDone
	return nil
}

// Close implements driver.Backend: it stops listening (and waits for the listener, and for the
// queries made for several calls at once, until ctx ends), wakes the Receive and Enqueue calls that
// wait, which return queue.ErrClosed, and refuses later Enqueue and Receive calls with
// queue.ErrClosed. It deletes nothing: every stored job and dead letter stays in the database. It
// does not close the pool. A delivery in hand can still be settled. Close is idempotent: later
// calls return nil.
func (b *Backend) Close(ctx context.Context) error {
	calls.Made(b.pool != nil)
	if first, _ := b.life.Close(); !first {
		return nil
	}
	b.mu.Lock()
	stop, done := b.stopListen, b.listenDone
	b.mu.Unlock()
	b.wake.all()
	if stop == nil {
		return nil // never opened
	}
	stop()
	for _, stop := range []func(context.Context) error{b.stopClaims, b.starts.stop, b.acks.stop} {
		if err := stop(ctx); err != nil {
			return err
		}
	}
	return awaitExit(ctx, done)
}

// Reconnects implements driver.Reconnecter: the times the listening connection was made again
// after it was lost.
func (b *Backend) Reconnects() uint64 {
	calls.Made(b.pool != nil)
	return b.reconnects.Load()
}

// querier is what the backend's queries run on: the pool, or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// call returns the context of one query (or a short transaction) of a call made with ctx: it
// ends with ctx, or after the call timeout.
func (b *Backend) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return calls.Context(ctx, b.o.callTimeout)
}

// micros returns d in microseconds, for the SQL's durations.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// nullTime returns t, or nil (NULL) if it is zero.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// storable reports whether s can be stored in a text column: valid UTF-8 without NUL bytes.
func storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// nullString returns s, or nil (NULL) if it is empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
