package queue

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/corral-go/corral/internal/panics"
	"github.com/corral-go/corral/queue/driver"
)

// Payload versions: a job records the version of its payload's schema
// ([WithVersion]) when it is enqueued, and a consumer handles only the
// versions it understands, its own and those it can upgrade from
// ([WithUpgrade]). A job of any other version (newer, during a rolling
// deploy; older, with no upgrade) is handed back for another consumer,
// without spending an attempt, for at most the version wait
// ([WithVersionWait]); then it is dead-lettered with [ReasonVersion].

// DefaultVersionWait is how long a job whose payload version a consumer
// does not understand waits for one that does, unless [WithVersionWait]
// says otherwise: long enough for a rolling deploy.
const DefaultVersionWait = time.Hour

// The hand-back delay of a job a consumer does not understand is a quarter
// of the time since the process first handed it back, within these bounds:
// a job that has just arrived comes back soon (a consumer that understands
// it is likely running: it is a deploy), one that has waited long is looked
// at less and less often.
const (
	minHandBack = 10 * time.Millisecond
	maxHandBack = time.Minute
)

// WithVersion sets the version of the schema of the queue's payload type T:
// Enqueue records it with every job ([Job.Version]), and the queue's
// consumers handle jobs of version v, and of the older versions declared
// with [WithUpgrade]. The default is 0, the version of every job enqueued by
// a queue that declares none.
//
// A consumer does not run its handler on a job of a version it does not
// understand (a newer one, enqueued by a producer already deployed at the
// next version, or an older one without an upgrade): it hands the job back
// to the backend, without spending an attempt, so that a consumer that
// understands it takes it. If none does within the version wait
// ([WithVersionWait]), the job is dead-lettered with [ReasonVersion]; redrive
// it once such a consumer runs. [Stats.AwaitingVersion] counts the jobs
// waiting so. A payload that fails to decode at a version the consumer
// understands is dead-lettered at once with [ReasonDecode].
//
// The in-memory backend passes payload values within one queue, whose
// version is the queue's: versions matter across processes, with a backend
// they share. It panics if v is negative.
func WithVersion(v int) Option {
	if v < 0 {
		panic("queue: WithVersion(" + strconv.Itoa(v) + "): negative version")
	}
	return optionFunc(func(o *options) { o.version = v })
}

// WithUpgrade declares that the queue's consumers understand payloads of
// the older version from: such a payload is decoded as an Old by the
// default codec (JSON; []byte and string pass through, so with a codec of
// your own take Old = []byte and decode it in f), then turned into the
// queue's payload type by f, before the handler gets it. An error from f,
// a panic in it, or a payload that does not decode dead-letters the job
// with [ReasonDecode]. f must be safe for concurrent use.
//
// It panics if from is negative or f is nil; New panics if from is not
// older than the queue's [WithVersion], if two upgrades start from the same
// version, or if T is not the queue's payload type.
func WithUpgrade[Old, T any](from int, f func(Old) (T, error)) Option {
	switch {
	case from < 0:
		panic("queue: WithUpgrade(" + strconv.Itoa(from) + "): negative version")
	case f == nil:
		panic("queue: WithUpgrade(" + strconv.Itoa(from) + ", nil): nil upgrade")
	}
	u := upgradeOption{from: from, desc: fmt.Sprintf("func(%T) (%T, error)", *new(Old), *new(T)),
		f: func(m *driver.Message) (T, error) {
			if old, ok := m.Value.(Old); ok { // from a backend that keeps values
				return f(old)
			}
			old, err := defaultCodec[Old]{}.Unmarshal(m.Body)
			if err != nil {
				var zero T
				return zero, fmt.Errorf("queue: decode payload of version %d: %w", from, err)
			}
			return f(old)
		}}
	return optionFunc(func(o *options) { o.upgrades = append(o.upgrades, u) })
}

// WithVersionWait sets how long a job whose payload version a consumer of
// the queue does not understand waits for one that does, from the first
// time a consumer of this process handed it back, before that consumer
// dead-letters it with [ReasonVersion]. Meanwhile the job comes back to the
// consumer every quarter of the time it has waited (at least 10ms apart,
// at most a minute). The default is [DefaultVersionWait]. It panics if d is
// not positive.
func WithVersionWait(d time.Duration) Option {
	if d <= 0 {
		panic("queue: WithVersionWait(" + d.String() + "): need a positive wait")
	}
	return optionFunc(func(o *options) { o.versionWait = d })
}

type upgradeOption struct {
	from int
	desc string // the upgrade function's type, for New's panic
	f    any    // func(*Message) (T, error)
}

// versions is what a queue knows of payload versions: its own, the
// upgrades from older ones, and the jobs its consumers hand back.
type versions[T any] struct {
	current  int
	upgrades map[int]func(*driver.Message) (T, error) // by the version upgraded from; nil if none
	waits    versionWaits
}

// init sets v to the versions o declares for payloads of type T, and
// panics on an upgrade that does not fit the queue (see WithUpgrade).
func (v *versions[T]) init(o *options) {
	v.current = o.version
	v.waits.wait = o.versionWait
	if v.waits.wait == 0 {
		v.waits.wait = DefaultVersionWait
	}
	for _, u := range o.upgrades {
		f, ok := u.f.(func(*driver.Message) (T, error))
		switch {
		case !ok:
			panic(fmt.Sprintf("queue: WithUpgrade(%d, %s): does not return %T, the queue's payload type", u.from, u.desc, *new(T)))
		case u.from >= v.current:
			panic(fmt.Sprintf("queue: WithUpgrade(%d): not older than the queue's version %d (WithVersion)", u.from, v.current))
		case v.upgrades[u.from] != nil:
			panic(fmt.Sprintf("queue: WithUpgrade(%d) given twice", u.from))
		}
		if v.upgrades == nil {
			v.upgrades = make(map[int]func(*driver.Message) (T, error))
		}
		v.upgrades[u.from] = f
	}
}

// understands reports whether the queue's consumers handle payloads of
// version n.
func (v *versions[T]) understands(n int) bool {
	return n == v.current || v.upgrades[n] != nil
}

// known lists the versions understood, for messages.
func (v *versions[T]) known() string {
	s := strconv.Itoa(v.current)
	for _, n := range slices.Sorted(maps.Keys(v.upgrades)) {
		s += ", " + strconv.Itoa(n)
	}
	return s
}

// upgrade decodes the payload of m, of the older version n, with its
// upgrade. A panic in the upgrade is returned as an error.
func (v *versions[T]) upgrade(n int, m *driver.Message) (p T, err error) {
	var catch panics.Catcher
	defer func() {
		if c := catch.Panic; c != nil {
			err = fmt.Errorf("queue: upgrade from version %d panicked: %v\n%s", n, c.Value, c.Stack)
		}
	}()
	defer catch.Recover()
	p, err = v.upgrades[n](m)
	catch.Returned()
	return p, err
}

// notUnderstood is the error of a job of version n that the queue does not
// understand.
func (v *versions[T]) notUnderstood(n int) error {
	return fmt.Errorf("queue: payload version %d not understood (this queue understands %s)", n, v.known())
}

// versionWaits keeps the jobs a queue's consumers handed back for a
// version they do not understand: when each was first handed back, so that
// the wait is measured from then, and when the record lapses. A record
// lapses when its job has not come back to this process for twice its
// last hand-back delay and a little more: another process took it (or
// keeps handing it back), and this one forgets it. So the records are at
// most the jobs stored that this process does not understand.
type versionWaits struct {
	wait time.Duration // set once by New

	mu        sync.Mutex // guards the fields below
	jobs      map[string]versionWait
	nextPrune time.Time
}

type versionWait struct {
	first, lapse time.Time
}

// lapseSlack is added to twice the hand-back delay when a record lapses
// (see versionWaits): a worker busy with other jobs when the job comes back
// takes it a little later.
const lapseSlack = 10 * time.Second

// handBack records that a consumer hands back the job with id at now, and
// returns the delay after which it is to be ready again, or reports bury if
// its wait is over (the record is then dropped).
func (w *versionWaits) handBack(id string, now time.Time) (delay time.Duration, bury bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruneLocked(now)
	r, ok := w.jobs[id]
	if !ok || now.After(r.lapse) {
		r = versionWait{first: now}
	}
	waited := now.Sub(r.first)
	if waited >= w.wait {
		delete(w.jobs, id)
		return 0, true
	}
	delay = min(max(waited/4, minHandBack), maxHandBack, w.wait-waited)
	r.lapse = now.Add(2*delay + lapseSlack)
	if w.jobs == nil {
		w.jobs = make(map[string]versionWait)
	}
	w.jobs[id] = r
	return delay, false
}

// count returns the records that have not lapsed at now.
func (w *versionWaits) count(now time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextPrune = time.Time{}
	w.pruneLocked(now)
	return len(w.jobs)
}

// pruneLocked drops the records lapsed at now, at most once a second. w.mu
// held.
func (w *versionWaits) pruneLocked(now time.Time) {
	if len(w.jobs) == 0 || now.Before(w.nextPrune) {
		return
	}
	w.nextPrune = now.Add(time.Second)
	for id, r := range w.jobs {
		if now.After(r.lapse) {
			delete(w.jobs, id)
		}
	}
	if len(w.jobs) == 0 {
		w.jobs = nil // give the memory back
	}
}
