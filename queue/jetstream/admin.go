package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
)

// The operator's verbs (driver.Admin).
//
// A pause is a record at corral.<name>.mark.paused in the state stream, present while the queue
// is paused. A Receive reads it before it hands out a job, unless a Receive of the same backend
// read it less than PauseWithin ago and found the queue running (so a busy process reads it at
// most once per PauseWithin, not once per job): once SetPaused(true) has returned, no Receive
// that starts deciding on a job more than PauseWithin afterwards hands one out, in any process
// (in the backend that paused, none that starts afterwards), until SetPaused(false). A job a
// paused Receive finds is handed
// back to the broker, ready, for pausePoll, and the Receive then reads the record every
// pausePoll until the queue is resumed: a resumed queue starts jobs again within about two
// pausePolls.
//
// A cancel is written into the job's state record (compare-and-set, as the deliveries write
// it). A job waiting (never delivered, or handed back ready or delayed) is then moved to the
// dead letters at once. A job in flight, or prefetched by a process, is only marked: the next
// write of its delivery (Start, the lease renewal of Extend, Nack, Release) finds the record
// changed and reads the cancel, so that its handler's context is cancelled within one renewal
// period of the consumer (half its lease) plus a request; a delivery of it after its process
// died buries it as the consumer takes it. The record of a job cancelled while waiting is
// kept (a few dozen bytes), so that a copy of the job a consumer had pulled meanwhile is
// refused by Start.
//
// A listing reads the streams: the consumer's info, the markers' and the state records'
// subjects, then every stored job (one request each) and the state record of each job that
// has one (one more), or every dead letter (one request each); it filters, orders and pages
// them in this process. Each List or Count costs a pass over the queue, which suits an
// operator's use, not a loop. Get costs a handful of requests. A delayed job's NextRun is
// the later of its start time and the end of the delay it was handed back with (a retry's or a
// release's, recorded in its state record), whichever is still to come; zero once both passed.

// pausePoll is how often a Receive that found the queue paused reads the pause record again,
// and how long it hands a job it found back for.
const pausePoll = 250 * time.Millisecond

// PauseWithin bounds how long after a pause (driver.Admin.SetPaused) the consumers of every
// process may still start jobs: how long a Receive trusts a reading of the pause record that
// found the queue running.
const PauseWithin = 100 * time.Millisecond

// pausedNow reports whether the queue is paused, reading the pause record unless a reading
// less than PauseWithin old found the queue running.
func (b *Backend) pausedNow(ctx context.Context) (bool, error) {
	if time.Since(time.Unix(0, b.runningSeen.Load())) < PauseWithin {
		return false, nil
	}
	p, err := b.paused(ctx)
	if err == nil && !p {
		b.runningSeen.Store(time.Now().UnixNano())
	}
	return p, err
}

func (b *Backend) pauseSubject() string { return b.markPrefix + "paused" }

// paused reads the pause record.
func (b *Backend) paused(ctx context.Context) (bool, error) {
	_, err := b.state.GetLastMsgForSubject(ctx, b.pauseSubject())
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, b.fail(ctx, "read the pause", err)
	}
	return true, nil
}

// holdWhilePaused returns at once unless a Receive of this backend found the queue paused;
// then it reads the pause record every pausePoll until the queue is resumed, or ctx ends.
func (b *Backend) holdWhilePaused(ctx context.Context) error {
	if !b.pauseSeen.Load() {
		return nil
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
		rctx, cancel := b.req(ctx)
		p, err := b.paused(rctx)
		cancel()
		if err != nil {
			return err
		}
		if !p {
			b.runningSeen.Store(time.Now().UnixNano())
			b.pauseSeen.Store(false)
			return nil
		}
		t.Reset(pausePoll)
	}
}

// SetPaused implements driver.Admin (see above for the bound).
func (b *Backend) SetPaused(ctx context.Context, paused bool) error {
	ctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	defer cancel()
	if err != nil {
		return err
	}
	if paused {
		if _, err := b.js.Publish(ctx, b.pauseSubject(), []byte("1")); err != nil {
			return b.fail(ctx, "pause", err)
		}
		b.runningSeen.Store(0) // this backend's Receives read the record from now on
		return nil
	}
	return b.purgeSubject(ctx, b.state, b.pauseSubject(), "resume", "")
}

// Cancel implements driver.Admin (see above).
func (b *Backend) Cancel(ctx context.Context, id string) error {
	ctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	defer cancel()
	if err != nil {
		return err
	}
	for range 8 {
		raw, err := b.findJob(ctx, id)
		if err != nil {
			return err
		}
		if raw == nil {
			if _, err := b.lastDead(ctx, "cancel", id); err != nil {
				if errors.Is(err, driver.ErrNotFound) {
					return driver.ErrNoJob
				}
				return err
			}
			return nil // a dead letter: nothing to do
		}
		done, err := b.cancelStored(ctx, raw)
		if done || err != nil {
			return err
		}
	}
	return b.fail(ctx, "cancel "+id, errors.New("the job's state kept changing"))
}

// findJob returns the stored job with id, or nil if there is none.
func (b *Backend) findJob(ctx context.Context, id string) (*natsjs.RawStreamMsg, error) {
	raw, err := b.work.GetMsg(ctx, 0, natsjs.WithGetMsgSubject(b.jobPrefix+"*."+token(id)))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, b.fail(ctx, "look up "+id, err)
	}
	return raw, nil
}

// cancelStored cancels the stored job raw: it marks its state record and, if the job waits,
// buries it. It reports false if the record changed meanwhile (the caller tries again).
func (b *Backend) cancelStored(ctx context.Context, raw *natsjs.RawStreamMsg) (bool, error) {
	m := messageFrom(raw.Header, raw.Data)
	st, stSeq, err := b.loadState(ctx, raw.Sequence, m.ID)
	if err != nil || st.Canceled {
		return err == nil, err
	}
	ci, err := b.consumerInfo(ctx)
	if err != nil {
		return false, err
	}
	kinds, err := b.marksOf(ctx, m.ID)
	if err != nil {
		return false, err
	}
	now := time.Now()
	waiting := len(kinds) > 0 || raw.Sequence > ci.Delivered.Stream
	if st.Until.After(now) {
		waiting = false // a run in progress
	}
	st.Canceled = true
	data, err := json.Marshal(st)
	if err != nil {
		return false, err
	}
	_, err = b.js.PublishMsg(ctx, &nats.Msg{Subject: b.stateSubject(raw.Sequence), Data: data},
		natsjs.WithExpectLastSequencePerSubject(stSeq))
	switch code := apiCode(err); {
	case code == codeWrongLast || code == codeWrongLR:
		return false, nil
	case err != nil:
		return false, b.fail(ctx, "cancel "+m.ID, err)
	}
	if !waiting {
		return true, nil
	}
	return true, b.buryWaiting(ctx, raw.Sequence, &m, st, now)
}

// buryWaiting moves the waiting job m, at seq, with state st, to the dead letters with
// ReasonCanceled.
func (b *Backend) buryWaiting(ctx context.Context, seq uint64, m *driver.Message, st jobState, now time.Time) error {
	hist := append(st.History, driver.Attempt{Start: now, End: now, Error: driver.ErrCanceled.Error()})
	hj, err := json.Marshal(hist)
	if err != nil {
		return err
	}
	h := jobHeader(m)
	h.Set(hdrReason, string(driver.ReasonCanceled))
	h.Set(hdrAttempt, strconv.Itoa(st.Starts))
	h.Set(hdrHistory, string(hj))
	h.Set(hdrSeq, strconv.FormatUint(seq, 10))
	putTime(h, hdrDeadAt, now)
	msg := &nats.Msg{Subject: b.deadPrefix + token(m.ID), Header: h, Data: m.Body}
	if _, err := b.publishDead(ctx, msg, m.ID, seq); err != nil {
		return err
	}
	if err := b.work.DeleteMsg(ctx, seq); err != nil && !gone(err) {
		return b.fail(ctx, "remove "+m.ID, err)
	}
	b.leaveUnique(ctx, m)
	return b.unmark(ctx, m.ID)
}

// buryIfCanceled buries the job of d with ReasonCanceled, adding a to its history, if err
// (of a Nack or Release) says an operator cancelled it; else it returns err.
func (b *Backend) buryIfCanceled(ctx context.Context, d *driver.Delivery, a driver.Attempt, err error) error {
	if !errors.Is(err, driver.ErrCanceled) {
		return err
	}
	_, err = b.bury(ctx, d, driver.ReasonCanceled, a)
	return err
}

// changedState is saveState's answer when the record of d's job changed under tok: it reads
// the record again, and returns driver.ErrCanceled (tok then holds the record) if an operator
// cancelled the job, else driver.ErrLeaseLost.
func (b *Backend) changedState(ctx context.Context, d *driver.Delivery, tok *delivered) error {
	st, seq, err := b.loadState(ctx, d.Seq, d.ID)
	if err != nil || !st.Canceled {
		return driver.ErrLeaseLost
	}
	tok.st, tok.stSeq = st, seq
	return driver.ErrCanceled
}

// consumerInfo reads the consumer's info on a handle of its own (info requests update the
// handle's cached info, which other requests read).
func (b *Backend) consumerInfo(ctx context.Context) (*natsjs.ConsumerInfo, error) {
	c, err := b.js.Consumer(ctx, b.workStream, b.consumerName)
	if err != nil {
		return nil, b.fail(ctx, "consumer info", err)
	}
	return c.CachedInfo(), nil
}

// marksOf returns the kinds of the markers the job id has.
func (b *Backend) marksOf(ctx context.Context, id string) (map[string]bool, error) {
	marks, err := b.marks(ctx, b.markPrefix+"*."+token(id))
	return marks[token(id)], err
}

// marks reads the markers under filter: the kinds of each job's, by the token of its ID.
func (b *Backend) marks(ctx context.Context, filter string) (map[string]map[string]bool, error) {
	si, err := b.state.Info(ctx, natsjs.WithSubjectFilter(filter))
	if err != nil {
		return nil, b.fail(ctx, "markers", err)
	}
	out := map[string]map[string]bool{}
	for subj := range si.State.Subjects {
		k, tok, ok := strings.Cut(strings.TrimPrefix(subj, b.markPrefix), ".")
		if !ok {
			continue
		}
		if out[tok] == nil {
			out[tok] = map[string]bool{}
		}
		out[tok][k] = true
	}
	return out, nil
}

// List implements driver.Admin (see above for its cost).
func (b *Backend) List(ctx context.Context, f driver.Filter) ([]driver.JobInfo, error) {
	if err := b.life.Check(calls); err != nil { // before the filter, as every method
		return nil, err
	}
	return driver.NewGather(func() error { return b.life.Check(calls) }, b.DeadLetters, b.storedJobs).List(ctx, f)
}

// Count implements driver.Admin (see above for its cost).
func (b *Backend) Count(ctx context.Context, f driver.Filter) (int, error) {
	return driver.NewGather(func() error { return b.life.Check(calls) }, b.DeadLetters, b.storedJobs).Count(ctx, f)
}

// storedJobs reads every stored job, with its state.
func (b *Backend) storedJobs(ctx context.Context) ([]driver.JobInfo, error) {
	rctx, cancel := b.req(ctx)
	ci, err := b.consumerInfo(rctx)
	var marks map[string]map[string]bool
	if err == nil {
		marks, err = b.marks(rctx, b.markPrefix+"*.*")
	}
	var records *natsjs.StreamInfo
	if err == nil {
		if records, err = b.state.Info(rctx, natsjs.WithSubjectFilter(b.statePrefix+">")); err != nil {
			err = b.fail(rctx, "state records", err)
		}
	}
	cancel()
	if err != nil {
		return nil, err
	}
	var out []driver.JobInfo
	for seq := uint64(1); ; {
		rctx, cancel := b.req(ctx)
		raw, err := b.work.GetMsg(rctx, seq, natsjs.WithGetMsgSubject(b.jobPrefix+">"))
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			cancel()
			return out, nil
		}
		if err != nil {
			cancel()
			return nil, b.fail(ctx, "list jobs", err)
		}
		seq = raw.Sequence + 1
		var info driver.JobInfo
		_, recorded := records.State.Subjects[b.stateSubject(raw.Sequence)]
		info, err = b.jobInfo(rctx, raw, ci, marks, recorded)
		cancel()
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
}

// jobInfo describes the stored job raw, given the consumer's info, the markers (see marks),
// and whether it has a state record.
func (b *Backend) jobInfo(ctx context.Context, raw *natsjs.RawStreamMsg, ci *natsjs.ConsumerInfo, marks map[string]map[string]bool, recorded bool) (driver.JobInfo, error) {
	info := driver.JobInfo{Message: messageFrom(raw.Header, raw.Data)}
	var st jobState
	if recorded {
		var err error
		if st, _, err = b.loadState(ctx, raw.Sequence, info.ID); err != nil {
			return info, err
		}
	}
	now := time.Now()
	info.Attempt, info.History, info.Canceling = st.Starts, st.History, st.Canceled
	kinds := marks[token(info.ID)]
	switch {
	case st.Until.After(now):
		info.State, info.LeaseEnd = driver.StateInFlight, st.Until
	case kinds[markWaiting] || kinds[markDelayed]:
		info.State = driver.StateDelayed
		for _, t := range []time.Time{info.NotBefore, st.Next} {
			if t.After(now) && t.After(info.NextRun) {
				info.NextRun = t
			}
		}
	case kinds[markReady] || raw.Sequence > ci.Delivered.Stream:
		info.State = driver.StateReady
	default: // delivered, not started: prefetched by a process
		info.State = driver.StateInFlight
	}
	if info.State != driver.StateInFlight {
		info.Canceling = false
	}
	return info, nil
}

// Get implements driver.Admin: the stored job with id, else its dead letter.
func (b *Backend) Get(ctx context.Context, id string) (driver.JobInfo, error) {
	ctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	defer cancel()
	if err != nil {
		return driver.JobInfo{}, err
	}
	raw, err := b.findJob(ctx, id)
	if err != nil {
		return driver.JobInfo{}, err
	}
	if raw == nil {
		dead, err := b.lastDead(ctx, "get", id)
		if errors.Is(err, driver.ErrNotFound) {
			return driver.JobInfo{}, driver.ErrNoJob
		}
		if err != nil {
			return driver.JobInfo{}, err
		}
		dm, err := deadFrom(dead)
		return driver.DeadInfo(&dm), err
	}
	ci, err := b.consumerInfo(ctx)
	if err != nil {
		return driver.JobInfo{}, err
	}
	marks, err := b.marks(ctx, b.markPrefix+"*."+token(id))
	if err != nil {
		return driver.JobInfo{}, err
	}
	return b.jobInfo(ctx, raw, ci, marks, true)
}

var _ driver.Admin = (*Backend)(nil)
