package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
)

// A unique key (driver.Message.Unique) is a record in the state stream, one per key (the
// stream keeps one message per subject), written compare-and-set on its sequence: the job
// that holds it, with its ordering key (to find it in the work stream), and when the key is
// free again (zero while the job is stored).
type uniqueRecord struct {
	ID    string    `json:"id"`
	Key   string    `json:"key,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

func (b *Backend) uniqueSubject(key string) string { return b.statePrefix + "u." + token(key) }

// claimUnique claims the unique key of m for m, and returns "" if it did; else the ID of the
// job that holds it. A key whose record names a stored job holds; so does one whose job left
// less than its period ago. A record that names a job no longer stored with no end to its
// period (its process died between the job's removal and the record's update) is free.
func (b *Backend) claimUnique(ctx context.Context, m *driver.Message) (string, error) {
	subj := b.uniqueSubject(m.Unique)
	for {
		if err := ctx.Err(); err != nil {
			return "", context.Cause(ctx)
		}
		rec, seq, err := b.loadUnique(ctx, subj)
		if err != nil {
			return "", err
		}
		if seq != 0 {
			held, err := b.holds(ctx, rec)
			if err != nil || held {
				return rec.ID, err
			}
		}
		saved, err := b.saveUnique(ctx, subj, uniqueRecord{ID: m.ID, Key: m.Key}, seq)
		if err != nil || saved {
			return "", err
		}
		// Another process wrote the record meanwhile: look again.
	}
}

// holds reports whether the key of rec is held now.
func (b *Backend) holds(ctx context.Context, rec uniqueRecord) (bool, error) {
	if !rec.Until.IsZero() {
		return time.Now().Before(rec.Until), nil
	}
	_, err := b.work.GetLastMsgForSubject(ctx, b.jobSubject(rec.Key, rec.ID))
	switch {
	case errors.Is(err, natsjs.ErrMsgNotFound):
		return false, nil
	case err != nil:
		return false, b.fail(ctx, "look up "+rec.ID, err)
	}
	return true, nil
}

// leaveUnique records that the job of m left the queue: its key stays held for its period. A
// failure is not the settle's: the key is then freed at the next claim, without its period.
func (b *Backend) leaveUnique(ctx context.Context, m *driver.Message) {
	if m.Unique == "" {
		return
	}
	subj := b.uniqueSubject(m.Unique)
	rec, seq, err := b.loadUnique(ctx, subj)
	if err != nil || seq == 0 || rec.ID != m.ID || !rec.Until.IsZero() {
		return
	}
	rec.Until = time.Now().Add(m.UniqueFor)
	_, _ = b.saveUnique(ctx, subj, rec, seq)
}

// releaseUnique frees the key of m, claimed for m, which was not stored after all.
func (b *Backend) releaseUnique(ctx context.Context, m *driver.Message) {
	subj := b.uniqueSubject(m.Unique)
	rec, seq, err := b.loadUnique(ctx, subj)
	if err != nil || seq == 0 || rec.ID != m.ID || !rec.Until.IsZero() {
		return
	}
	rec.Until = time.Now()
	_, _ = b.saveUnique(ctx, subj, rec, seq)
}

// loadUnique reads the record of subject subj, and its sequence (0 if there is none).
func (b *Backend) loadUnique(ctx context.Context, subj string) (uniqueRecord, uint64, error) {
	var rec uniqueRecord
	raw, err := b.state.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return rec, 0, nil
	}
	if err != nil {
		return rec, 0, b.fail(ctx, "load a unique key", err)
	}
	if err := json.Unmarshal(raw.Data, &rec); err != nil {
		return rec, raw.Sequence, fmt.Errorf("jetstream: unique key record: %w", err)
	}
	return rec, raw.Sequence, nil
}

// saveUnique writes rec at subj if its last sequence is still seq, and reports whether it did.
func (b *Backend) saveUnique(ctx context.Context, subj string, rec uniqueRecord, seq uint64) (bool, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	return b.publishIfLast(ctx, "save a unique key", subj, data, seq)
}

// publishIfLast publishes data at subj (of the state stream) if the last sequence of subj is
// still seq, and reports whether it did: false if another process wrote subj meanwhile. op
// names the call in an error.
func (b *Backend) publishIfLast(ctx context.Context, op, subj string, data []byte, seq uint64) (bool, error) {
	_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: data}, natsjs.WithExpectLastSequencePerSubject(seq))
	switch apiCode(err) {
	case codeWrongLast, codeWrongLR:
		return false, nil
	case 0:
		if err != nil {
			return false, b.fail(ctx, op, err)
		}
		return true, nil
	}
	return false, b.fail(ctx, op, err)
}
