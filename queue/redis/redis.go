package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue/driver"
)

// Backend is a driver.Backend on Redis Streams. Pass it to queue.New with queue.WithBackend.
//
// One Backend serves one queue.Queue in one process; several processes (each with its own
// Backend and Queue of the same name, on the same server) share the queue's jobs. A Backend is
// safe for concurrent use. Make one with New: a method of a zero Backend panics at once,
// whatever its arguments ("redis: zero Backend: use redis.New").
//
// Each command runs in a goroutine of the call that sends it, so that the call returns at its
// deadline (WithCallTimeout, or the caller's ctx) even if the client would wait longer (a
// goredis.Client without ContextTimeoutEnabled waits for its read timeout). A command left so
// ends with its connection: when the server answers, the client's read timeout passes, or the
// client is closed; until then it holds one of the client's connections.
type Backend struct {
	client   goredis.UniversalClient
	name     string
	prefix   string // "corral:{name}:", KEYS[1] of every script
	consumer string // this backend's consumer in the group
	o        options

	// life is whether the backend is open. Open sets cfg once, before it marks the backend
	// opened; the calls that found it opened (life.Check) read it without mu.
	life    driver.Lifecycle
	closing <-chan struct{} // life's, closed by Close

	// mu guards the fields below; it is never held across a command.
	mu    sync.Mutex
	cfg   driver.Config
	lease time.Duration // the queue's lease, once CheckLease agreed it
	wake  chan struct{} // closed and replaced when room freed (wakes every blocked Enqueue)
	rcv   receivers     // the waiting receivers and what the looks saw (receivers.go)

	xs exchanges // the exchanges with the server running now (see within)

	losses atomic.Uint64 // see Losses
}

// Option configures a Backend in New. An option given a setting no backend can honour panics
// when it is called, and a nil Option makes New panic.
type Option interface{ apply(*options) }

type options struct {
	callTimeout  time.Duration
	pollInterval time.Duration
	replicas     int           // WithReplicas: replicas that must confirm each write
	replicaWait  time.Duration // WithReplicas: how long to wait for them
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithCallTimeout bounds every command the backend sends (5s by default), with any client,
// whatever its options: a command not answered within d fails with an error matching
// queue.ErrUnavailable, and one whose caller's ctx ends first fails with context.Cause(ctx);
// neither reports success once its deadline passed. Its outcome is unknown: the server may
// still run it (see Backend). It panics if d is not positive.
func WithCallTimeout(d time.Duration) Option {
	if d <= 0 {
		panic("redis: WithCallTimeout(" + d.String() + "): need a positive timeout")
	}
	return optionFunc(func(o *options) { o.callTimeout = d })
}

// WithPollInterval bounds how long the Backend's waiting Receive calls go without one of them
// asking the server again after a look that found no job, and how long an Enqueue blocked on
// a full queue waits before it asks again (100ms by default). Calls of the same Backend wake
// a waiting Receive at once; the poll is how it learns of jobs enqueued or settled by other
// processes, and of leases that ended. One waiting Receive asks per interval, not each of
// them. It panics if d is not positive.
func WithPollInterval(d time.Duration) Option {
	if d <= 0 {
		panic("redis: WithPollInterval(" + d.String() + "): need a positive interval")
	}
	return optionFunc(func(o *options) { o.pollInterval = d })
}

// WithReplicas makes every call that writes (Enqueue, Receive, Start, Extend, Ack, Nack,
// Release, Bury, Redrive, Purge) wait, with WAIT on the connection of the write, until n
// replicas have received it, d at most. A write that fewer replicas confirmed in time fails
// with an error matching queue.ErrUnavailable: it took effect on the master, which may still
// lose it in a failover (enqueue again with the same ID; ErrDuplicate then means it was
// kept). Redis replication is asynchronous without it: a failover loses what the new master
// had not received. The count n is a shared setting of the queue (0 without WithReplicas),
// agreed at Open as the others (see Open); the wait d is this Backend's own. Each write then sends its script's text (EVAL) in one pipeline with the
// WAIT. It panics if n is not positive or d is negative.
func WithReplicas(n int, d time.Duration) Option {
	if n <= 0 || d < 0 {
		panic(fmt.Sprintf("redis: WithReplicas(%d, %v): need a positive count and a non-negative wait", n, d))
	}
	return optionFunc(func(o *options) { o.replicas, o.replicaWait = n, d })
}

// New returns a Backend for the queue called name (1 to 200 bytes of valid UTF-8, without
// braces, which would change the queue's hash slot, or NUL bytes) on client.
// Every key of the queue starts with "corral:{name}:", one hash slot, so that the queue's Lua
// scripts run on one node of a Redis Cluster. New does no I/O; it panics on a nil client, a
// bad name or a nil option. The client stays the caller's: Close does not close it.
func New(client goredis.UniversalClient, name string, opts ...Option) *Backend {
	if client == nil {
		panic("redis: New(nil, " + strconv.Quote(name) + "): nil client")
	}
	if name == "" || len(name) > 200 || strings.ContainsAny(name, "{}\x00") || !utf8.ValidString(name) {
		panic("redis: New(client, " + strconv.Quote(name) + "): want a queue name of 1 to 200 bytes of UTF-8 without braces or NUL")
	}
	o := options{callTimeout: 5 * time.Second, pollInterval: 100 * time.Millisecond}
	for _, opt := range opts {
		if opt == nil {
			panic("redis: nil option")
		}
		opt.apply(&o)
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	b := &Backend{
		client: client, name: name, prefix: "corral:{" + name + "}:",
		consumer: hex.EncodeToString(r[:]), o: o,
		wake: make(chan struct{}),
	}
	b.life.Init()
	b.closing = b.life.Closing()
	return b
}

var (
	_ driver.Backend        = (*Backend)(nil)
	_ driver.SharedLease    = (*Backend)(nil)
	_ driver.ReceiveStarter = (*Backend)(nil)
)

// calls bounds and classifies the backend's commands by driver.Call's rule; the backend's own
// part is which errors say the server could not be reached (unreachable).
var calls = driver.Call{Name: "redis", Unreachable: unreachable}

// call returns the context of one command of a call made with ctx. Every command starts here,
// so that on a zero Backend it panics, in the caller's goroutine, saying what to use.
func (b *Backend) call(ctx context.Context) (context.Context, context.CancelFunc) {
	calls.Made(b.client != nil)
	return calls.Context(ctx, b.o.callTimeout)
}

// within runs f, one exchange with the server, in a goroutine of its own that xs counts, and
// returns its result, or context.Cause(cctx) as soon as cctx ends, whichever comes first: a
// call keeps its deadline whatever the client's options (a goredis.Client without
// ContextTimeoutEnabled waits for its read timeout, not for the context). A result that
// arrives after cctx ended is not a success: the call's deadline passed.
//
// An exchange abandoned at the deadline ends with its connection: when the server answers,
// the client's read timeout passes, or the client is closed; until then it holds one of the
// client's connections, and Close waits for it. Its outcome is unknown, as with any answer
// lost: the call reports queue.ErrUnavailable (or the caller's cause).
func within[T any](xs *exchanges, cctx context.Context, f func(context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // the exchange's goroutine never waits to hand its result over
	xs.start()
	go func() {
		defer xs.end()
		v, err := f(cctx)
		done <- result{v, err}
	}()
	var zero T
	select {
	case r := <-done:
		if r.err == nil && cctx.Err() != nil {
			return zero, context.Cause(cctx)
		}
		return r.v, r.err
	case <-cctx.Done():
		return zero, context.Cause(cctx)
	}
}

// exchanges counts the goroutines that within starts, so that the Backend that started them
// can wait for them (Close). The zero value is ready to use.
type exchanges struct {
	mu   sync.Mutex    // guards the fields below
	n    int           // exchanges running
	idle chan struct{} // closed when n drops to 0, if a waiter made it; nil otherwise
}

func (x *exchanges) start() {
	x.mu.Lock()
	x.n++
	x.mu.Unlock()
}

func (x *exchanges) end() {
	x.mu.Lock()
	if x.n--; x.n == 0 && x.idle != nil {
		close(x.idle)
		x.idle = nil
	}
	x.mu.Unlock()
}

// wait waits until no exchange runs, or returns context.Cause(ctx) if ctx ends first.
func (x *exchanges) wait(ctx context.Context) error {
	x.mu.Lock()
	if x.n == 0 {
		x.mu.Unlock()
		return nil
	}
	if x.idle == nil {
		x.idle = make(chan struct{})
	}
	idle := x.idle
	x.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// run runs script s with the queue's prefix as its key, within the call timeout.
func (b *Backend) run(ctx context.Context, op string, s *goredis.Script, args ...any) (any, error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	if b.o.replicas > 0 && s != statsScript {
		return b.runReplicated(cctx, op, s, args)
	}
	v, err := within(&b.xs, cctx, func(cctx context.Context) (any, error) {
		return s.Run(cctx, b.client, []string{b.prefix}, args...).Result()
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		b.reloadIfGone(cctx, err)
		return nil, calls.Fail(cctx, op, err)
	}
	return v, nil
}

// reloadIfGone makes a ClusterClient reload the cluster's slots when err says the node it
// sent a command to could not be reached: the slot's master may have been failed over, which
// the client would otherwise learn only at its next periodic reload (a minute, by default),
// since a dead node sends no MOVED.
func (b *Backend) reloadIfGone(ctx context.Context, err error) {
	if cc, ok := b.client.(*goredis.ClusterClient); ok && unreachable(err) {
		cc.ReloadState(ctx)
	}
}

// runReplicated runs script s and WAIT in one pipeline, on one connection, and fails if
// fewer replicas than WithReplicas asks confirmed the write. On a ClusterClient the pipeline
// goes to the client of the master serving the queue's slot: a cluster pipeline would send
// WAIT, which names no key, to any node. A master that moved (MOVED, or gone) makes the
// cluster client reload the slots and the call fail with ErrUnavailable, to be tried again.
func (b *Backend) runReplicated(cctx context.Context, op string, s *goredis.Script, args []any) (any, error) {
	var c goredis.Cmdable = b.client
	cc, cluster := b.client.(*goredis.ClusterClient)
	if cluster {
		m, err := within(&b.xs, cctx, func(cctx context.Context) (*goredis.Client, error) { return cc.MasterForKey(cctx, b.prefix) })
		if err != nil {
			cc.ReloadState(cctx)
			return nil, calls.Fail(cctx, op, err)
		}
		c = m
	}
	v, err := within(&b.xs, cctx, func(cctx context.Context) (any, error) { return b.evalWait(cctx, c, s, args) })
	if err != nil {
		if cluster && moved(err) {
			cc.ReloadState(cctx)
			return nil, fmt.Errorf("redis: %s: %w: the queue's master moved: %w", op, driver.ErrUnavailable, err)
		}
		b.reloadIfGone(cctx, err)
		if errors.Is(err, errFewReplicas) {
			return nil, fmt.Errorf("redis: %s: %w", op, err)
		}
		return nil, calls.Fail(cctx, op, err)
	}
	return v, nil
}

// errFewReplicas wraps queue.ErrUnavailable: the write took effect on the master, and fewer
// replicas than asked confirmed it in time.
var errFewReplicas = fmt.Errorf("%w: written on the master", driver.ErrUnavailable)

// moved reports whether err is a cluster redirection: the write did not happen there.
func moved(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "MOVED ") || strings.HasPrefix(s, "ASK ")
}

// evalWait sends EVAL of s and WAIT in one pipeline on c.
func (b *Backend) evalWait(cctx context.Context, c goredis.Cmdable, s *goredis.Script, args []any) (any, error) {
	var ev *goredis.Cmd
	var wait *goredis.Cmd
	_, err := c.Pipelined(cctx, func(p goredis.Pipeliner) error {
		ev = s.Eval(cctx, p, []string{b.prefix}, args...)
		wait = p.Do(cctx, "WAIT", b.o.replicas, b.o.replicaWait.Milliseconds())
		return nil
	})
	v, evErr := ev.Result()
	if evErr != nil && !errors.Is(evErr, goredis.Nil) {
		return nil, evErr
	}
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	n, _ := wait.Int()
	if n < b.o.replicas {
		return nil, fmt.Errorf("%w, confirmed by %d of %d replicas within %v", errFewReplicas, n, b.o.replicas, b.o.replicaWait)
	}
	return v, nil
}

// unreachable reports whether err says the server could not be reached or is not serving yet.
func unreachable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, goredis.ErrClosed) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	s := err.Error()
	for _, p := range []string{"LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "EOF", "connection", "i/o timeout"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// Open implements driver.Backend: it agrees the queue's shared settings (capacity, overflow,
// dedup horizon, dead-letter limit, and the replicas of WithReplicas: n, or 0 without it)
// with the other processes of the queue: the first to open it records them; a later one with
// other settings fails, naming the setting and both values. (WithReplicas's wait is each
// process's own.)
// It creates the stream and its consumer group if they are missing.
func (b *Backend) Open(ctx context.Context, cfg driver.Config) error {
	calls.Made(b.client != nil)
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.WithDefaults()
	return b.life.Open(calls, func() error {
		if err := b.agree(ctx, "open", cfg); err != nil {
			return err
		}
		b.mu.Lock()
		b.cfg = cfg
		b.mu.Unlock()
		return nil
	})
}

// agree records cfg's shared settings, and the stream and its consumer group, where the
// server has none, and compares cfg's settings with the queue's.
func (b *Backend) agree(ctx context.Context, op string, cfg driver.Config) error {
	v, err := b.run(ctx, op, settingsScript, cfg.Capacity, cfg.Overflow.String(),
		cfg.DedupHorizon.Milliseconds(), cfg.DeadLetterLimit, b.o.replicas)
	if err != nil {
		return err
	}
	got := append(strs(v), make([]string, 5)...) // "" for a setting the record lacks
	if err := driver.CompareSettings(
		driver.Setting{Name: "capacity", Mine: strconv.Itoa(cfg.Capacity), Queue: got[0]},
		driver.Setting{Name: "overflow", Mine: cfg.Overflow.String(), Queue: got[1]},
		driver.Setting{Name: "dedup horizon", Mine: msString(strconv.FormatInt(cfg.DedupHorizon.Milliseconds(), 10)), Queue: msString(got[2])},
		driver.Setting{Name: "dead-letter limit", Mine: strconv.Itoa(cfg.DeadLetterLimit), Queue: got[3]},
		driver.Setting{Name: "replicas", Mine: strconv.Itoa(b.o.replicas), Queue: got[4]},
	); err != nil {
		return fmt.Errorf("redis: queue %s: %w", b.name, err)
	}
	return nil
}

// runHealed is run for a script that may run again after it failed for want of the consumer
// group (one that writes nothing before it reads the group, or only what it may write twice):
// on a server that lost the queue's keys, it records them again as Open and CheckLease did
// (regroup), and runs s once more, if the caller's ctx has not ended. Its calls are made with
// cctx: ctx, or a context derived from it that outlives its cancel (see look).
func (b *Backend) runHealed(ctx, cctx context.Context, op string, s *goredis.Script, args ...any) (any, error) {
	v, err := b.run(cctx, op, s, args...)
	if noGroup(err) && ctx.Err() == nil {
		if err = b.regroup(cctx, op); err == nil {
			v, err = b.run(cctx, op, s, args...)
		}
	}
	return v, err
}

// regroup records again what Open and CheckLease recorded, on an open Backend, for a server
// that lost the queue's keys: the error of op if it could not.
func (b *Backend) regroup(ctx context.Context, op string) error {
	if err := b.life.Check(calls); err != nil {
		return err
	}
	if err := b.agree(ctx, op, b.cfg); err != nil {
		return err
	}
	b.mu.Lock()
	lease := b.lease
	b.mu.Unlock()
	if lease > 0 {
		if err := b.CheckLease(ctx, lease); err != nil {
			return err
		}
	}
	b.losses.Add(1)
	return nil
}

// Losses implements driver.LossCounter: it returns how many times this Backend found the
// server without the queue's keys and recorded them again (see the package doc); each time,
// the server had lost the jobs, dead letters and leases it held for the queue, which stay
// lost. Calls that find the keys gone at the same moment may each record them, so one loss
// counts once or more. A Backend counts the losses that its own Receive and Stats calls
// found. The queue's Health reports the count (queue.Health.Losses).
func (b *Backend) Losses() uint64 {
	calls.Made(b.client != nil)
	return b.losses.Load()
}

var _ driver.LossCounter = (*Backend)(nil)

// noGroup reports whether err is the server's answer to a command on a consumer group it
// does not have.
func noGroup(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOGROUP ")
}

// CheckLease implements driver.SharedLease: the lease is one setting of the queue (the idle
// time after which XAUTOCLAIM takes a pending entry), recorded by the first consumer; a
// consumer asking for another fails with an error naming both.
func (b *Backend) CheckLease(ctx context.Context, lease time.Duration) error {
	if err := b.life.Check(calls); err != nil {
		return err
	}
	if lease < time.Millisecond {
		return fmt.Errorf("redis: lease %v must be at least 1ms", lease)
	}
	v, err := b.run(ctx, "check the lease", leaseScript, lease.Milliseconds())
	if err != nil {
		return err
	}
	s, _ := v.(string)
	if s != strconv.FormatInt(lease.Milliseconds(), 10) {
		return fmt.Errorf("redis: queue %s: %w", b.name, &driver.SettingsError{Setting: "lease", Mine: lease.String(), Queue: msString(s)})
	}
	b.mu.Lock()
	b.lease = lease
	b.mu.Unlock()
	return nil
}

// Close implements driver.Backend: it wakes the Receive and Enqueue calls that wait, which
// return queue.ErrClosed, and refuses later ones, and removes this Backend's consumer from
// the queue's consumer group if it holds no pending entry (a consumer that does, or whose
// removal did not reach the server, is reaped later: see Receive). It deletes no job, and
// does not close the client. A delivery in hand can still be settled. An exchange with the
// server that a call abandoned at its deadline (see WithCallTimeout) runs until the server
// answers, the client's read timeout passes or the client is closed: Close waits for those
// started before it. It returns context.Cause(ctx) if ctx ends before the consumer was
// removed and those exchanges ended, else nil; later calls return nil.
func (b *Backend) Close(ctx context.Context) error {
	calls.Made(b.client != nil)
	first, opened := b.life.Close()
	if !first {
		return nil
	}
	if opened {
		_, err := b.run(ctx, "close", leaveScript, b.consumer)
		if err != nil && ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	return b.xs.wait(ctx)
}

// waiter returns the channel the next signal closes.
func (b *Backend) waiter() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.wake
}

// wait waits for a signal, d, Close or ctx.
func (b *Backend) wait(ctx context.Context, w <-chan struct{}, d time.Duration) error {
	_, err := calls.Wait(ctx, w, b.closing, d)
	return err
}

// strs returns a script's array reply as strings.
func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, len(a))
	for i, x := range a {
		switch x := x.(type) {
		case string:
			out[i] = x
		case int64:
			out[i] = strconv.FormatInt(x, 10)
		}
	}
	return out
}

// msString returns a number of milliseconds as a time.Duration's string.
func msString(ms string) string {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return ms
	}
	return (time.Duration(n) * time.Millisecond).String()
}
