// Package version is the mechanism behind package queue's payload
// versions: the upgrades a queue declares from older versions, and the
// record of the jobs its consumers hand back for a version they do not
// understand, which tells when such a job has waited long enough.
package version

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

// Upgrade is an upgrade from the older version From, as queue.WithUpgrade
// declares it: F is a func(*driver.Message) (T, error) for the queue's
// payload type T, Desc the type of the user's function, for Init's panic.
type Upgrade struct {
	From int
	Desc string
	F    any
}

// Set is what a queue knows of payload versions: its own (Current), the
// upgrades from older ones, and the jobs its consumers hand back (Waits).
// Init sets it once, before any other use.
type Set[T any] struct {
	Current  int
	upgrades map[int]func(*driver.Message) (T, error) // by the version upgraded from; nil if none
	Waits    Waits
}

// Init sets v to the version current, the upgrades ups and the version
// wait, and panics on an upgrade that does not fit the queue: one that
// does not return T, one not older than current, two from one version.
func (v *Set[T]) Init(current int, wait time.Duration, ups []Upgrade) {
	v.Current = current
	v.Waits.wait = wait
	for _, u := range ups {
		f, ok := u.F.(func(*driver.Message) (T, error))
		switch {
		case !ok:
			panic(fmt.Sprintf("queue: WithUpgrade(%d, %s): does not return %T, the queue's payload type", u.From, u.Desc, *new(T)))
		case u.From >= v.Current:
			panic(fmt.Sprintf("queue: WithUpgrade(%d): not older than the queue's version %d (WithVersion)", u.From, v.Current))
		case v.upgrades[u.From] != nil:
			panic(fmt.Sprintf("queue: WithUpgrade(%d) given twice", u.From))
		}
		if v.upgrades == nil {
			v.upgrades = make(map[int]func(*driver.Message) (T, error))
		}
		v.upgrades[u.From] = f
	}
}

// Understands reports whether the queue's consumers handle payloads of
// version n.
func (v *Set[T]) Understands(n int) bool {
	return n == v.Current || v.upgrades[n] != nil
}

// Upgrade decodes the payload of m, of the older version n, with its
// upgrade. A panic in the upgrade is returned as an error.
func (v *Set[T]) Upgrade(n int, m *driver.Message) (p T, err error) {
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

// NotUnderstood is the error of a job of version n that the queue does not
// understand.
func (v *Set[T]) NotUnderstood(n int) error {
	s := strconv.Itoa(v.Current)
	for _, n := range slices.Sorted(maps.Keys(v.upgrades)) {
		s += ", " + strconv.Itoa(n)
	}
	return fmt.Errorf("queue: payload version %d not understood (this queue understands %s)", n, s)
}

// The hand-back delay of a job a consumer does not understand is a quarter
// of the time since the process first handed it back, within these bounds:
// a job that has just arrived comes back soon (a consumer that understands
// it is likely running: it is a deploy), one that has waited long is looked
// at less and less often.
const (
	minHandBack = 10 * time.Millisecond
	maxHandBack = time.Minute
)

// lapseSlack is added to twice the hand-back delay when a record lapses
// (see Waits): a worker busy with other jobs when the job comes back takes
// it a little later.
const lapseSlack = 10 * time.Second

// Waits keeps the jobs a queue's consumers handed back for a version they
// do not understand: when each was first handed back, so that the wait is
// measured from then, and when the record lapses. A record lapses when its
// job has not come back to this process for twice its last hand-back delay
// and a little more: another process took it (or keeps handing it back),
// and this one forgets it. So the records are at most the jobs stored that
// this process does not understand. Waits is safe for concurrent use.
type Waits struct {
	wait time.Duration // set once by Init

	mu        sync.Mutex // guards the fields below
	jobs      map[string]record
	nextPrune time.Time
}

type record struct {
	first, lapse time.Time
}

// Wait is how long a job waits for a consumer that understands it.
func (w *Waits) Wait() time.Duration { return w.wait }

// HandBack records that a consumer hands back the job with id at now, and
// returns the delay after which it is to be ready again, or reports bury if
// its wait is over (the record is then dropped).
func (w *Waits) HandBack(id string, now time.Time) (delay time.Duration, bury bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruneLocked(now)
	r, ok := w.jobs[id]
	if !ok || now.After(r.lapse) {
		r = record{first: now}
	}
	waited := now.Sub(r.first)
	if waited >= w.wait {
		delete(w.jobs, id)
		return 0, true
	}
	delay = min(max(waited/4, minHandBack), maxHandBack, w.wait-waited)
	r.lapse = now.Add(2*delay + lapseSlack)
	if w.jobs == nil {
		w.jobs = make(map[string]record)
	}
	w.jobs[id] = r
	return delay, false
}

// Count returns the records that have not lapsed at now.
func (w *Waits) Count(now time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextPrune = time.Time{}
	w.pruneLocked(now)
	return len(w.jobs)
}

// pruneLocked drops the records lapsed at now, at most once a second. w.mu
// held.
func (w *Waits) pruneLocked(now time.Time) {
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
