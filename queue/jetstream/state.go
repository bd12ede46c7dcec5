package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
)

// delivered is the backend's part of a driver.Delivery (its Token).
type delivered struct {
	msg      natsjs.Msg
	arrived  time.Time // when the message reached this process (see misnumbered)
	mu       sync.Mutex
	leaseEnd time.Time // guarded by mu

	// The job's state, read and written by the calls on the delivery, which may overlap
	// (the consumer renews a lease while the worker acks): stMu serialises them.
	stMu    sync.Mutex
	st      jobState // guarded by stMu
	stSeq   uint64   // the sequence of the job's state record in the state stream, 0 if none
	started bool     // Start succeeded on this delivery
	marked  bool     // the job may have a marker
	n       uint64   // the broker's count of deliveries of the message (NumDelivered)
}

// jobState is a job's record in the state stream, at corral.<name>.state.<stream sequence>:
// the handler runs it had (the attempts), the failed attempts' history, and whether a delivery
// was given back at shutdown. A job has one as soon as a handler starts on it: so a job whose
// handler took its process down is known to have spent its attempt, and a job a dead process
// had only prefetched is known not to have. Writes are compare-and-set on the record's
// sequence, so two deliveries of one job (a broker that lost its consumer's state in a crash
// redelivers a job that is still being handled) cannot both start it.
type jobState struct {
	// ID is the job's ID: a record whose ID differs belongs to an earlier job whose stream
	// sequence a crashed broker gave again, and is ignored.
	ID string `json:"id"`
	// Starts counts the handler runs started on the job: its attempts.
	Starts int `json:"starts,omitempty"`
	// Until is when the lease of the run in progress ends (zero if none): another delivery
	// of the job is not started before it.
	Until time.Time `json:"until,omitzero"`
	// Started is when the run in progress started (zero if none, or written by a version
	// that did not record it).
	Started time.Time `json:"started,omitzero"`
	// Next is when the job, handed back with a delay (Nack's retry delay, Release's delay),
	// is due again: zero if it was handed back without one, once a run started, or if written
	// by a version that did not record it. Inspect reports it as NextRun.
	Next time.Time `json:"next,omitzero"`
	// Held is when the lease of a delivery that waits, not started, for a start (a rate
	// limit's, or a Share's slot) ends, as its last Extend set it: zero once a run started.
	Held time.Time `json:"held,omitzero"`
	// Released says a delivery was handed to a consumer and given back by Release: the job
	// has been started in time (see driver.Delivery.Redelivered).
	Released bool             `json:"released,omitempty"`
	History  []driver.Attempt `json:"history,omitempty"`
	// Snoozes counts the job's snoozes (a Nack of a snoozed attempt), each of which gave back
	// the attempt its run started.
	Snoozes int `json:"snoozes,omitempty"`
	// Canceled says an operator cancelled the job (see admin.go): a delivery whose write
	// finds it returns driver.ErrCanceled, and a redelivery buries the job.
	Canceled bool `json:"canceled,omitempty"`
}

// recorded reports whether the job of tok may have a state record: one was read or written
// on this delivery, or Start ran on it. A job acked on its first delivery without a Start has
// none. tok.stMu held.
func (tok *delivered) recorded() bool { return tok.stSeq != 0 || tok.started }

// droppedState is the body of a dropped record (see dropState).
var droppedState = []byte("{}")

func (b *Backend) stateSubject(seq uint64) string {
	return b.statePrefix + strconv.FormatUint(seq, 10)
}

// loadState reads the state record of the job at stream sequence seq with ID id: its state and
// the record's sequence (zero values if it has none).
func (b *Backend) loadState(ctx context.Context, seq uint64, id string) (jobState, uint64, error) {
	st := jobState{ID: id}
	raw, err := b.state.GetLastMsgForSubject(ctx, b.stateSubject(seq))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return st, 0, nil
	}
	if err != nil {
		return st, 0, b.fail(ctx, "load the state of "+id, err)
	}
	var got jobState
	if err := json.Unmarshal(raw.Data, &got); err != nil {
		return st, raw.Sequence, fmt.Errorf("jetstream: state of %s: %w", id, err)
	}
	if got.ID != id {
		return st, raw.Sequence, nil // another job's: overwritten at the next save
	}
	return got, raw.Sequence, nil
}

// saveState writes tok's state if the record is still where tok read it, and moves tok's record
// sequence on. It returns driver.ErrLeaseLost if another delivery of the job wrote it first
// (the record changed under this delivery), and driver.ErrCanceled if an operator's Cancel
// did: then tok holds the record as Cancel left it, for the burial.
func (b *Backend) saveState(ctx context.Context, d *driver.Delivery, tok *delivered) error {
	tok.st.ID = d.ID
	data, err := json.Marshal(tok.st)
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: b.stateSubject(d.Seq), Data: data}
	ack, err := b.js.PublishMsg(ctx, msg, natsjs.WithExpectLastSequencePerSubject(tok.stSeq))
	switch apiCode(err) {
	case codeWrongLast, codeWrongLR:
		return b.changedState(ctx, d, tok)
	case 0:
		if err != nil {
			return b.fail(ctx, "save the state of "+d.ID, err)
		}
		tok.stSeq = ack.Sequence
		return nil
	}
	return b.fail(ctx, "save the state of "+d.ID, err)
}

// dropState deletes the state record of the job at seq, once the job is settled for good. With
// per-message TTLs it publishes in its place an empty record (no ID: no job's, see loadState)
// that the server removes a second later: a publish, which the server handles with less work
// than the purge request made otherwise.
func (b *Backend) dropState(ctx context.Context, d *driver.Delivery, tok *delivered) error {
	if !tok.recorded() {
		return nil
	}
	if b.recordTTL {
		if _, err := b.js.PublishMsg(ctx, droppedRecord(b.stateSubject(d.Seq))); err != nil {
			return b.fail(ctx, "drop the state of "+d.ID, err)
		}
		return nil
	}
	return b.purgeSubject(ctx, b.state, b.stateSubject(d.Seq), "drop the state of", d.ID)
}

// dropSoon is dropState for the record of the job of d, acked, on a state stream with
// per-message TTLs, without waiting for the server's answer: it reports whether the client
// could send it. The server stores one connection's messages to a stream in the order they
// were sent, so that confirmDrops can wait for such removals with one request.
func (b *Backend) dropSoon(d *driver.Delivery) bool {
	return b.nc.PublishMsg(droppedRecord(b.stateSubject(d.Seq))) == nil
}

// confirmDrops publishes one more empty record, on a subject of its own, and waits for the
// server's answer, within a call timeout of ctx: the removals dropSoon sent before it were
// then stored, unless they were lost on the way (a connection broken with them in its buffer,
// a change of the state stream's leader), which no answer reports. It does not wait while the
// client is not connected (the removals go out when it reconnects, if it does). A removal
// lost, like one that failed (the error is the server's or ctx's), leaves a record never read
// again (see aftermath.go).
func (b *Backend) confirmDrops(ctx context.Context) error {
	if !b.nc.IsConnected() {
		return nil
	}
	rctx, cancel := b.req(ctx)
	defer cancel()
	if _, err := b.js.PublishMsg(rctx, droppedRecord(b.statePrefix+"dropped")); err != nil {
		return b.fail(rctx, "confirm the dropped records", err)
	}
	return nil
}

// droppedRecord is the empty record, removed by the server a second after it is stored, that
// replaces a job's record at subject.
func droppedRecord(subject string) *nats.Msg {
	return &nats.Msg{Subject: subject, Data: droppedState, Header: nats.Header{natsjs.MsgTTLHeader: []string{"1s"}}}
}

// delivery decodes m and its state record into a Delivery. A first delivery has no record to
// read (Start checks that there is none); a redelivery reads it.
func (b *Backend) delivery(ctx context.Context, m natsjs.Msg) (*driver.Delivery, error) {
	md, err := m.Metadata()
	if err != nil {
		return nil, fmt.Errorf("jetstream: message metadata: %w", err)
	}
	tok := &delivered{msg: m, n: md.NumDelivered}
	qm := messageFrom(m.Headers(), m.Data())
	tok.st.ID = qm.ID
	if md.NumDelivered > 1 {
		if tok.st, tok.stSeq, err = b.loadState(ctx, md.Sequence.Stream, qm.ID); err != nil {
			return nil, err
		}
		b.expireRun(&tok.st, time.Now())
	}
	tok.marked = md.NumDelivered > 1 || !qm.NotBefore.IsZero()
	qm.Attempt, qm.Snoozes = tok.st.Starts+1, tok.st.Snoozes
	return &driver.Delivery{Message: qm, Token: tok, Seq: md.Sequence.Stream,
		Redelivered: tok.st.Starts > 0 || tok.st.Released}, nil
}

// expireRun records in st, at now, the run in progress if its lease is over: the broker took
// the job back unsettled (its process died, or its handler overran its lease), and the run
// failed with queue.ErrLeaseExpired, from its start (or, in a record that lacks it, its
// lease's) to now. The entry is saved with the record's next write (Start, Nack, Release,
// Bury); until then a later delivery records it again. A run whose lease has not ended (a
// crashed broker can redeliver a job that is still being handled) is left to Start to refuse.
func (b *Backend) expireRun(st *jobState, now time.Time) {
	if st.Until.IsZero() || st.Starts == 0 {
		return
	}
	ackWait := b.ackWait()
	if now.Before(st.Until.Add(-leaseMargin(ackWait))) {
		return
	}
	if n := len(st.History); n == 0 || st.History[n-1].Number < st.Starts {
		start := st.Started
		if start.IsZero() {
			start = st.Until.Add(-ackWait)
		}
		st.History = append(st.History, driver.Attempt{Number: st.Starts, Start: start, End: now, Error: driver.ErrLeaseExpired.Error()})
	}
	st.Until, st.Started = time.Time{}, time.Time{}
}

// ack sends an acknowledgement (+ACK, -NAK, +WPI, +TERM) and waits for the server to confirm
// it, which the nats.go API does only for +ACK. ctx must have a deadline (see req).
func (b *Backend) ack(ctx context.Context, m natsjs.Msg, body string) error {
	if m.Reply() == "" {
		return errors.New("jetstream: message has no reply subject")
	}
	if _, err := b.nc.RequestWithContext(ctx, m.Reply(), []byte(body)); err != nil {
		return b.fail(ctx, body, err)
	}
	return nil
}

func nakDelay(d time.Duration) string {
	if d <= 0 {
		return "-NAK"
	}
	return `-NAK {"delay":` + strconv.FormatInt(int64(d), 10) + `}`
}

// skip marks the job of d and asks the broker to deliver it again after delay: this delivery
// did not reach a handler, so it changes nothing in the job's state (attempts are Starts).
func (b *Backend) skip(ctx context.Context, d *driver.Delivery, delay time.Duration, kind string) error {
	tok := d.Token.(*delivered)
	if err := b.remark(ctx, tok, d.ID, kind); err != nil {
		return err
	}
	return b.ack(ctx, tok.msg, nakDelay(delay))
}

// Markers, one message at corral.<name>.mark.<kind>.<id> per job that the broker's counts
// misplace, let Stats tell delayed and handed-back jobs from leased and ready ones.
const (
	markWaiting = "u" // not delivered yet, start time to come: delayed, not ack pending
	markDelayed = "d" // handed back with a delay: delayed, but ack pending
	markReady   = "r" // handed back ready (released, or behind its ordering key): ack pending
)

func (b *Backend) mark(ctx context.Context, id, kind string) error {
	if _, err := b.js.Publish(ctx, b.markPrefix+kind+"."+token(id), nil); err != nil {
		return b.fail(ctx, "mark "+id, err)
	}
	return nil
}

// remark gives the job of tok the marker kind alone. The new marker is written before the old
// ones are removed, so that Stats never sees the job unmarked.
func (b *Backend) remark(ctx context.Context, tok *delivered, id, kind string) error {
	if err := b.mark(ctx, id, kind); err != nil {
		return err
	}
	if tok.marked {
		for _, k := range []string{markWaiting, markDelayed, markReady} {
			if k == kind {
				continue
			}
			if err := b.purgeSubject(ctx, b.state, b.markPrefix+k+"."+token(id), "unmark", id); err != nil {
				return err
			}
		}
	}
	tok.marked = true
	return nil
}

func (b *Backend) unmark(ctx context.Context, id string) error {
	return b.purgeSubject(ctx, b.state, b.markPrefix+"*."+token(id), "unmark", id)
}
