package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/admin"
)

// State is where a job is in its life, as [Queue.Jobs] lists it.
type State = driver.JobState

// The states a job may be listed in.
const (
	// StateReady: waiting to be handled now.
	StateReady = driver.StateReady
	// StateDelayed: waiting for its delay or retry backoff.
	StateDelayed = driver.StateDelayed
	// StateInFlight: being handled (leased by a consumer, in any process).
	StateInFlight = driver.StateInFlight
	// StateDead: a dead letter.
	StateDead = driver.StateDead
	// StateAwaitingVersion: stored (ready, delayed or in flight) with a
	// payload version newer than this queue's ([WithVersion]), so waiting
	// for a consumer that understands it.
	StateAwaitingVersion State = "awaiting_version"
)

// Filter selects jobs for the operator's verbs ([Queue.Jobs], [Queue.Count]
// and the bulk verbs). Its zero value selects every stored job: ready,
// delayed and in flight, not the dead letters.
type Filter struct {
	// State selects the jobs in that state ("" for every stored job).
	State State
	// IDPrefix selects the jobs whose ID starts with it.
	IDPrefix string
	// Key selects the jobs with this ordering key.
	Key string
	// Reason selects the dead letters with this reason.
	Reason Reason
	// OlderThan, if positive, selects the jobs enqueued at least this long
	// ago.
	OlderThan time.Duration
	// Cursor is where a page starts: a [Page]'s Next ("" for the first
	// page). It stays valid while jobs move (see [Queue.Jobs]).
	Cursor string
	// Limit is the page size of Jobs, and the batch size of the bulk
	// verbs: 1 to 1000, 100 if zero.
	Limit int
}

// JobInfo is a job as an operator sees it ([Queue.Jobs], [Queue.Inspect]): the job, and in
// its [JobStatus] (State, History, NextRun, LeaseHolder, LeaseEnd, Canceling, Reason, DeadAt)
// where it is and what happened to it.
type JobInfo[T any] struct {
	// Job is the job; its Attempt is the handler runs it had so far.
	Job Job[T]
	// Err is the error decoding its payload, if it could not be (the
	// Payload is then zero).
	Err error
	// Size is the size of the encoded payload in bytes (0 with a backend
	// that keeps payload values, such as the in-memory one).
	Size int
	// JobStatus is where the job is (State) and what happened to it:
	// its failed attempts, when it runs next, who holds its lease, whether
	// it is being cancelled, and why and when it died.
	JobStatus
}

// JobStatus is where a job is and what happened to it, as its backend reports it
// ([driver.JobStatus] documents each field): State; History, its failed attempts, oldest first;
// NextRun, when a delayed job becomes ready; LeaseHolder and LeaseEnd, who holds a job in
// flight, where the backend knows it, and when its lease ends unless renewed; Canceling,
// whether the job, in flight, is being cancelled ([Queue.Cancel]); Reason and DeadAt, why and
// when a dead letter was dead-lettered. In a [JobInfo], a job whose payload version is newer
// than the queue's ([WithVersion]) has State [StateAwaitingVersion] and keeps the other fields
// of the state its backend reported (a delayed job its NextRun, a job in flight its lease).
type JobStatus = driver.JobStatus

// Page is one page of a listing: its jobs, and the cursor of the next page
// ("" after the last one).
type Page[T any] struct {
	Jobs []JobInfo[T]
	Next string
}

// errNoAdmin is the error of an operator's verb on a backend that does not
// implement driver.Admin.
var errNoAdmin = fmt.Errorf("queue: the backend does not implement the operator's verbs (driver.Admin): %w", errors.ErrUnsupported)

// admin returns the backend's driver.Admin, or an error if q is closed or
// the backend has none.
func (q *Queue[T]) admin() (driver.Admin, error) {
	if err := q.usable(); err != nil {
		return nil, err
	}
	a, ok := q.backend.(driver.Admin)
	if !ok {
		return nil, errNoAdmin
	}
	return a, nil
}

// adminCall calls f with the backend's driver.Admin and records its outcome
// in Health; it fails as admin does if q is closed or the backend has none.
func (q *Queue[T]) adminCall(ctx context.Context, f func(driver.Admin) error) error {
	a, err := q.admin()
	if err == nil {
		err = f(a)
		q.observe(ctx, err)
	}
	return err
}

// Jobs returns a page of the jobs that f selects, in every process's view
// of the backend: at most f.Limit, ordered by enqueue time, then ID. Pass
// the page's Next as f.Cursor for the next one. A cursor is a place in that
// order, not in a state's list, so it stays valid while jobs move: the next
// page starts after it whatever was handled meanwhile (a job that moved
// into the state behind the cursor is not listed; one that moved in ahead
// of it is). It fails with an error matching errors.ErrUnsupported if the
// backend does not implement driver.Admin, and with a clear error for a bad
// cursor or page size. A payload that cannot be decoded is listed with its
// error in JobInfo.Err.
func (q *Queue[T]) Jobs(ctx context.Context, f Filter) (Page[T], error) {
	a, df, err := q.selection(f)
	if err != nil {
		return Page[T]{}, err
	}
	infos, err := a.List(ctx, df)
	q.observe(ctx, err)
	if err != nil {
		return Page[T]{}, err
	}
	p := Page[T]{Jobs: make([]JobInfo[T], len(infos))}
	for i := range infos {
		q.jobInfo(&infos[i], &p.Jobs[i])
	}
	if len(infos) == df.Limit {
		p.Next = admin.EncodeCursor(infos[len(infos)-1].Cursor())
	}
	return p, nil
}

// Count returns how many jobs f selects (its Cursor and Limit aside).
func (q *Queue[T]) Count(ctx context.Context, f Filter) (int, error) {
	f.Cursor = ""
	a, df, err := q.selection(f)
	if err != nil {
		return 0, err
	}
	n, err := a.Count(ctx, df)
	q.observe(ctx, err)
	return n, err
}

// Inspect returns the job with id: a stored job if there is one, else the
// dead letter with id; ErrNoJob if there is neither.
func (q *Queue[T]) Inspect(ctx context.Context, id string) (JobInfo[T], error) {
	var info driver.JobInfo
	err := q.adminCall(ctx, func(a driver.Admin) (err error) {
		info, err = a.Get(ctx, id)
		return err
	})
	var ji JobInfo[T]
	if err == nil {
		q.jobInfo(&info, &ji)
	}
	return ji, err
}

// Cancel cancels the job with id, in whatever process holds it. A job
// waiting (ready or delayed) goes to the dead letters at once with
// [ReasonCanceled]. A job being handled keeps running until its consumer's
// next lease renewal (every half of the consumer's lease, [WithLease]) tells
// it: its handler's context is then cancelled with cause [ErrCanceled], and
// the job goes to the dead letters with ReasonCanceled, unless the handler
// succeeded first. Cancelling a dead letter, or a job already cancelled,
// does nothing. ErrNoJob if no job or dead letter has id.
func (q *Queue[T]) Cancel(ctx context.Context, id string) error {
	return q.adminCall(ctx, func(a driver.Admin) error { return a.Cancel(ctx, id) })
}

// Pause pauses the queue, in every process: its consumers start no job
// (their running handlers finish) until [Queue.Resume]; Enqueue still
// stores jobs; Stats and Health say Paused. How soon the consumers of other
// processes stop is the backend's bound (see its docs); those of the
// in-memory backend stop at once.
func (q *Queue[T]) Pause(ctx context.Context) error { return q.setPaused(ctx, true) }

// Resume resumes a paused queue (see [Queue.Pause]).
func (q *Queue[T]) Resume(ctx context.Context) error { return q.setPaused(ctx, false) }

func (q *Queue[T]) setPaused(ctx context.Context, p bool) error {
	err := q.adminCall(ctx, func(a driver.Admin) error { return a.SetPaused(ctx, p) })
	if err == nil {
		q.hl.SetPaused(p)
	}
	return err
}

// RedriveAll redrives the dead letters f selects (f.State must be "" or
// StateDead), in batches of f.Limit, and returns how many it redrove. It
// is idempotent: a dead letter redriven or purged meanwhile is skipped, as
// is one whose ID a stored job has. Only dead letters of jobs enqueued
// by the call are looked at, so that it ends.
func (q *Queue[T]) RedriveAll(ctx context.Context, f Filter) (int, error) {
	return q.bulk(ctx, f, true, q.Redrive)
}

// PurgeAll deletes the dead letters f selects (f.State must be "" or
// StateDead), in batches of f.Limit, and returns how many it deleted. It
// is idempotent, as RedriveAll.
func (q *Queue[T]) PurgeAll(ctx context.Context, f Filter) (int, error) {
	return q.bulk(ctx, f, true, q.Purge)
}

// CancelAll cancels the stored jobs f selects (f.State must not be
// StateDead), in batches of f.Limit, as [Queue.Cancel] does, and returns
// how many it cancelled. It is idempotent: a job settled meanwhile is
// skipped. Only jobs enqueued by the call are looked at, so that it ends
// while producers run.
func (q *Queue[T]) CancelAll(ctx context.Context, f Filter) (int, error) {
	return q.bulk(ctx, f, false, q.Cancel)
}

// bulk applies verb to every job f selects, dead letters if dead, page by
// page, and counts those it applied to.
func (q *Queue[T]) bulk(ctx context.Context, f Filter, dead bool, verb func(context.Context, string) error) (int, error) {
	a, df, err := q.selection(f)
	if err != nil {
		return 0, err
	}
	if err := admin.CheckBulk(&df, f.State, dead); err != nil {
		return 0, err
	}
	return admin.Bulk(ctx, a, df, verb, q.observe)
}

// selection returns the backend's driver.Admin and its filter for f, now;
// or an error if q is closed, the backend has no Admin, or f is not one.
func (q *Queue[T]) selection(f Filter) (driver.Admin, driver.Filter, error) {
	df := driver.Filter{State: f.State, IDPrefix: f.IDPrefix, Key: f.Key, Reason: f.Reason, Limit: f.Limit}
	a, err := q.admin()
	if err != nil {
		return nil, df, err
	}
	switch f.State {
	case "", StateReady, StateDelayed, StateInFlight, StateDead:
	case StateAwaitingVersion:
		df.State, df.MinVersion = "", q.vers.Current+1
	default:
		return nil, df, fmt.Errorf("queue: unknown job state %q", f.State)
	}
	return a, df, admin.Prepare(&df, f.OlderThan, f.Cursor, time.Now())
}

// jobInfo fills ji from the backend's info.
func (q *Queue[T]) jobInfo(info *driver.JobInfo, ji *JobInfo[T]) {
	ji.Err = q.job(&info.Message, &ji.Job)
	ji.Size, ji.JobStatus = len(info.Body), info.JobStatus
	if info.State != StateDead && info.Version > q.vers.Current {
		ji.State = StateAwaitingVersion
	}
}
