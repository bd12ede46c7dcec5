package driver

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"time"
)

// Admin is implemented by a Backend that answers an operator's verbs: list,
// count and inspect its jobs, cancel one, pause and resume the queue. The
// queue looks for it once, at queue.New, as database/sql looks for its
// optional driver interfaces; the queue's admin methods (queue.Queue.Jobs,
// Inspect, Cancel, Pause, Resume and the bulk verbs, which the queue builds
// on List) return an error matching errors.ErrUnsupported with a backend
// that does not implement it. It is optional, not a part of [Backend],
// so that a backend written before it keeps compiling and working: an
// operator's verbs are not needed to run jobs. Every backend of this
// repository implements it and passes queuetest's admin subtests.
//
// The verbs answer for the queue as the backend stores it, in every
// process: a job listed in flight may be leased by another process, a
// cancel reaches the handler wherever it runs, a pause stops the
// consumers of every process. The rules of Backend hold: every method may
// block, returns context.Cause(ctx) when ctx ends first, and a broker
// backend bounds its calls and reports them as [Call] says.
//
// Jobs are listed in one order, the same in every state: by EnqueuedAt, then
// by ID. A [Cursor] is a place in that order, not in a state's list, so it
// stays valid while jobs move: a page taken after it starts after it,
// whatever was acked, retried, cancelled or dead-lettered meanwhile (a job
// that moved into the listed state behind the cursor is not seen again; one
// that moved in ahead of it is).
type Admin interface {
	// List returns the jobs that match f, at most f.Limit of them, in the
	// order above, starting after f.After. A Limit of zero or less, or
	// above [MaxPage], is an error.
	List(ctx context.Context, f Filter) ([]JobInfo, error)

	// Count returns how many jobs match f (f.After and f.Limit are
	// ignored).
	Count(ctx context.Context, f Filter) (int, error)

	// Get returns the job with id: a stored job if there is one, else the
	// dead letter with id. ErrNoJob if there is neither.
	Get(ctx context.Context, id string) (JobInfo, error)

	// Cancel cancels the job with id. A job waiting (ready or delayed) is
	// moved to the dead letters at once, with [ReasonCanceled] and a
	// history entry numbered 0 whose Error is the text of [ErrCanceled]. A
	// job in flight is marked: from then on Start and Extend of its
	// delivery return ErrCanceled (the consumer then cancels its handler's
	// context with cause ErrCanceled, and buries it with ReasonCanceled),
	// and a Nack or Release of it, or the expiry of its lease, buries it
	// with ReasonCanceled instead; an Ack still acks it (its handler
	// finished first). Cancelling a job already cancelled, or a dead
	// letter, does nothing and returns nil. ErrNoJob if no job or dead
	// letter has id.
	Cancel(ctx context.Context, id string) error

	// SetPaused pauses (true) or resumes (false) the queue, in every
	// process. While it is paused Receive hands out no job (a consumer's
	// running handlers finish, and its workers wait), Enqueue still stores
	// jobs, and Stats reports Paused. Each backend documents within what
	// bound the consumers of other processes see the change. Pausing a
	// paused queue, or resuming a running one, does nothing.
	SetPaused(ctx context.Context, paused bool) error
}

// MaxPage is the most jobs one List call may ask for.
const MaxPage = 1000

// JobState is where a job is in its life, as Admin lists it.
type JobState string

// The states of a job. A stored job is in one of the first three; a dead
// letter is StateDead.
const (
	// StateReady: waiting to be delivered now (including a job queued
	// behind a busy ordering key whose NotBefore has come).
	StateReady JobState = "ready"
	// StateDelayed: waiting for its NotBefore or retry delay.
	StateDelayed JobState = "delayed"
	// StateInFlight: leased to a consumer.
	StateInFlight JobState = "in_flight"
	// StateDead: a dead letter.
	StateDead JobState = "dead"
)

// Filter selects jobs for Admin's List and Count. Its zero value selects
// every stored job (ready, delayed or in flight: not the dead letters).
type Filter struct {
	// State selects the jobs in that state; "" selects every stored job
	// but the dead letters.
	State JobState
	// IDPrefix selects the jobs whose ID starts with it.
	IDPrefix string
	// Key selects the jobs with this ordering key.
	Key string
	// Reason selects the dead letters with this reason (it selects nothing
	// in another state).
	Reason Reason
	// EnqueuedBefore, if not zero, selects the jobs enqueued before it.
	EnqueuedBefore time.Time
	// MinVersion, if not zero, selects the jobs whose payload version is
	// at least MinVersion (queue.Queue uses it to find the jobs that await
	// a consumer of a newer version).
	MinVersion int
	// After is where a page starts: after this place in the order of
	// Admin's listings. The zero Cursor is the start.
	After Cursor
	// Limit is the most jobs List returns, 1 to MaxPage.
	Limit int
}

// Cursor is a place in the order in which Admin lists jobs: by EnqueuedAt
// (to the nanosecond of its wall clock reading), then by ID.
type Cursor struct {
	EnqueuedAt time.Time
	ID         string
}

// IsZero reports whether c is the start of the order.
func (c Cursor) IsZero() bool { return c.EnqueuedAt.IsZero() && c.ID == "" }

// Before reports whether a job enqueued at at with id comes before c in the
// order, or is at c (so not after it).
func (c Cursor) Before(at time.Time, id string) bool {
	if c.IsZero() {
		return false
	}
	if a, b := at.UnixNano(), c.EnqueuedAt.UnixNano(); a != b {
		return a < b
	}
	return id <= c.ID
}

// Match reports whether a job described by info matches f, but for f.After
// and f.Limit. A backend that filters in its own process calls it, so that
// every backend applies the same rules.
func (f *Filter) Match(info *JobInfo) bool {
	switch {
	case f.State == "" && info.State == StateDead,
		f.State != "" && info.State != f.State,
		f.IDPrefix != "" && !strings.HasPrefix(info.ID, f.IDPrefix),
		f.Key != "" && info.Key != f.Key,
		f.Reason != "" && info.Reason != f.Reason,
		!f.EnqueuedBefore.IsZero() && !info.EnqueuedAt.Before(f.EnqueuedBefore),
		f.MinVersion != 0 && info.Version < f.MinVersion:
		return false
	}
	return true
}

// CheckPage returns an error for a Limit List does not take.
func (f *Filter) CheckPage() error {
	if f.Limit <= 0 || f.Limit > MaxPage {
		return errPage
	}
	return nil
}

var errPage = errors.New("queue: page size must be 1 to 1000")

// JobInfo is a job as Admin describes it. Its Message.Attempt is the number
// of handler runs the job had.
type JobInfo struct {
	Message
	JobStatus
}

// JobStatus is where a job is and what happened to it: the part of a
// JobInfo that is not the job's Message. The queue package describes a job
// to its users with the same struct.
type JobStatus struct {
	// State is where the job is.
	State JobState
	// History lists the job's failed attempts, oldest first (as a dead
	// letter's: see DeadMessage.History).
	History []Attempt
	// NextRun is when a delayed job becomes ready (zero for a job in
	// another state).
	NextRun time.Time
	// LeaseHolder names who holds a job in flight, as the backend knows it
	// ("" if it does not): a consumer, a process.
	LeaseHolder string
	// LeaseEnd is when the lease of a job in flight ends, unless renewed.
	LeaseEnd time.Time
	// Canceling says the job, in flight, was cancelled (see Admin.Cancel):
	// its handler's context is being cancelled.
	Canceling bool
	// Reason is why a dead letter was dead-lettered.
	Reason Reason
	// DeadAt is when a dead letter was dead-lettered.
	DeadAt time.Time
}

// Cursor returns the place of i in the order of Admin's listings: a page
// that ends with i continues after it.
func (i *JobInfo) Cursor() Cursor { return Cursor{EnqueuedAt: i.EnqueuedAt, ID: i.ID} }

// Page returns the jobs of all that f selects (Match) after f.After, in
// the order of Admin's listings, at most f.Limit of them (every one if
// f.Limit is zero). It reorders all. A backend that reads every job into
// its own process answers List and Count with it.
func Page(all []JobInfo, f *Filter) []JobInfo {
	out := all[:0]
	for i := range all {
		if f.Match(&all[i]) && !f.After.Before(all[i].EnqueuedAt, all[i].ID) {
			out = append(out, all[i])
		}
	}
	SortJobs(out)
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out
}

// SortJobs sorts jobs in the order of Admin's listings. A backend that
// gathers jobs from several places calls it.
func SortJobs(jobs []JobInfo) {
	slices.SortFunc(jobs, func(a, b JobInfo) int {
		if c := cmp.Compare(a.EnqueuedAt.UnixNano(), b.EnqueuedAt.UnixNano()); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// Gather reads a backend's jobs into its own process, for List and Count:
// the dead letters if dead, else every stored job. A backend whose store
// cannot filter and order them answers Admin's List and Count with its
// Gather's.
type Gather func(ctx context.Context, dead bool) ([]JobInfo, error)

// NewGather returns the Gather of a backend that checks it is open with
// open, reads its stored jobs with stored, and its dead letters with dead
// (its Backend.DeadLetters, read by DeadInfos). An error from open is
// returned before anything is read.
func NewGather(open func() error, dead func(context.Context) iter.Seq2[DeadMessage, error], stored func(context.Context) ([]JobInfo, error)) Gather {
	return func(ctx context.Context, isDead bool) ([]JobInfo, error) {
		if err := open(); err != nil {
			return nil, err
		}
		if isDead {
			return DeadInfos(dead(ctx))
		}
		return stored(ctx)
	}
}

// List answers Admin.List with what g reads: it refuses a Limit List does
// not take (CheckPage), reads the dead letters if f.State is StateDead and
// the stored jobs otherwise, and returns the page of them f selects (Page).
func (g Gather) List(ctx context.Context, f Filter) ([]JobInfo, error) {
	if err := f.CheckPage(); err != nil {
		return nil, err
	}
	all, err := g(ctx, f.State == StateDead)
	if err != nil {
		return nil, err
	}
	return Page(all, &f), nil
}

// Count answers Admin.Count with what g reads, as List does but for every
// job f selects.
func (g Gather) Count(ctx context.Context, f Filter) (int, error) {
	f.After, f.Limit = Cursor{}, 0
	all, err := g(ctx, f.State == StateDead)
	if err != nil {
		return 0, err
	}
	return len(Page(all, &f)), nil
}

// DeadInfo returns the dead letter dm as Admin describes it: StateDead,
// with its reason, history and time of death. It shares dm's slices.
func DeadInfo(dm *DeadMessage) JobInfo {
	return JobInfo{Message: dm.Message, JobStatus: JobStatus{State: StateDead, History: dm.History, Reason: dm.Reason, DeadAt: dm.At}}
}

// DeadInfos reads every dead letter of letters (a Backend's DeadLetters)
// as Admin describes them (DeadInfo), for a Gather: the first error ends
// it.
func DeadInfos(letters iter.Seq2[DeadMessage, error]) ([]JobInfo, error) {
	var out []JobInfo
	for dm, err := range letters {
		if err != nil {
			return nil, err
		}
		out = append(out, DeadInfo(&dm))
	}
	return out, nil
}
