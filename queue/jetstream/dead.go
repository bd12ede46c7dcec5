package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
)

// publishDead publishes the dead letter msg of the job id at work-stream sequence seq. When the
// broker refuses it because the dead letters are at their limit, a dead letter with the same ID
// (which msg replaces anyway) or else the oldest is deleted, and the publish tried again; the
// IDs of the oldest ones deleted are returned.
func (b *Backend) publishDead(ctx context.Context, msg *nats.Msg, id string, seq uint64) ([]string, error) {
	// The same job buried twice (a crash before Term) is one dead letter.
	msgID := id + "\x00dead\x00" + strconv.FormatUint(seq, 10)
	var evicted []string
	for range 16 {
		_, err := b.js.PublishMsg(ctx, msg, natsjs.WithMsgID(msgID))
		if apiCode(err) != codeFull {
			if err != nil {
				return evicted, b.fail(ctx, "dead-letter "+id, err)
			}
			return evicted, nil
		}
		if _, err := b.dead.GetLastMsgForSubject(ctx, msg.Subject); err == nil {
			if err := b.purgeSubject(ctx, b.dead, msg.Subject, "replace the dead letter of", id); err != nil {
				return evicted, err
			}
			continue
		} else if !errors.Is(err, natsjs.ErrMsgNotFound) {
			return evicted, b.fail(ctx, "dead letter of "+id, err)
		}
		oldest, err := b.dead.GetMsg(ctx, 0, natsjs.WithGetMsgSubject(b.deadPrefix+">"))
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return evicted, b.fail(ctx, "oldest dead letter", err)
		}
		switch err := b.dead.DeleteMsg(ctx, oldest.Sequence); {
		case err == nil:
			evicted = append(evicted, oldest.Header.Get(hdrID))
		case gone(err):
			// Another process evicted it first.
		default:
			return evicted, b.fail(ctx, "evict the oldest dead letter", err)
		}
	}
	return evicted, fmt.Errorf("jetstream: dead-letter %s: the dead letters stayed full", id)
}

// deadFrom decodes a dead-letter message.
func deadFrom(raw *natsjs.RawStreamMsg) (driver.DeadMessage, error) {
	dm := driver.DeadMessage{Message: messageFrom(raw.Header, raw.Data)}
	dm.Reason = reasonFrom(raw.Header.Get(hdrReason))
	dm.Attempt, _ = strconv.Atoi(raw.Header.Get(hdrAttempt))
	dm.At = getTime(raw.Header, hdrDeadAt)
	if h := raw.Header.Get(hdrHistory); h != "" {
		if err := json.Unmarshal([]byte(h), &dm.History); err != nil {
			return dm, fmt.Errorf("jetstream: dead letter %s: history: %w", dm.ID, err)
		}
	}
	return dm, nil
}

// reasonFrom returns the reason a dead letter's header stores. Dead letters written before
// ReasonOverflow was renamed queue.ReasonEvicted store "overflow": they read as evicted, so
// that a queue's dead letters keep one word for one reason across the rename.
func reasonFrom(s string) driver.Reason {
	if s == "overflow" {
		return driver.ReasonEvicted
	}
	return driver.Reason(s)
}

// DeadLetters implements driver.Backend: it reads the dead-letter stream in order, one request
// per dead letter.
func (b *Backend) DeadLetters(ctx context.Context) iter.Seq2[driver.DeadMessage, error] {
	calls.Made(b.js != nil)
	return func(yield func(driver.DeadMessage, error) bool) {
		if err := b.life.Check(calls); err != nil {
			yield(driver.DeadMessage{}, err)
			return
		}
		for seq := uint64(1); ; {
			rctx, cancel := b.req(ctx)
			raw, err := b.dead.GetMsg(rctx, seq, natsjs.WithGetMsgSubject(b.deadPrefix+">"))
			cancel()
			if errors.Is(err, natsjs.ErrMsgNotFound) {
				return
			}
			if err != nil {
				yield(driver.DeadMessage{}, b.fail(ctx, "dead letters", err))
				return
			}
			seq = raw.Sequence + 1
			dm, err := deadFrom(raw)
			if !yield(dm, err) {
				return
			}
		}
	}
}

// Redrive implements driver.Backend: it publishes the newest dead letter with id as a new job
// (fresh attempts, no delay) and then deletes every dead letter with id.
func (b *Backend) Redrive(ctx context.Context, id string) error {
	ctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	defer cancel()
	if err != nil {
		return err
	}
	raw, err := b.lastDead(ctx, "redrive", id)
	if err != nil {
		return err
	}
	m := messageFrom(raw.Header, raw.Data)
	m.Unique, m.UniqueFor = "", 0 // a redriven job holds no unique key
	m.EnqueuedAt, m.NotBefore, m.StartBy = time.Now(), time.Time{}, time.Time{}
	msg := &nats.Msg{Subject: b.jobSubject(m.Key, m.ID), Header: jobHeader(&m), Data: m.Body}
	// Redriving the same dead letter twice (a crash before it is deleted) makes one job.
	msgID := id + "\x00redrive\x00" + strconv.FormatUint(raw.Sequence, 10)
	_, err = b.js.PublishMsg(ctx, msg, natsjs.WithExpectLastSequencePerSubject(0), natsjs.WithMsgID(msgID))
	switch apiCode(err) {
	case 0:
		if err != nil {
			return b.fail(ctx, "redrive "+id, err)
		}
	case codeWrongLast, codeWrongLR:
		return driver.ErrDuplicate
	case codeFull:
		return driver.ErrFull
	default:
		return b.fail(ctx, "redrive "+id, err)
	}
	return b.purgeDead(ctx, id)
}

func (b *Backend) purgeDead(ctx context.Context, id string) error {
	return b.purgeSubject(ctx, b.dead, b.deadPrefix+token(id), "purge", id)
}

// Purge implements driver.Backend.
func (b *Backend) Purge(ctx context.Context, id string) error {
	ctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	defer cancel()
	if err != nil {
		return err
	}
	if _, err := b.lastDead(ctx, "purge", id); err != nil {
		return err
	}
	return b.purgeDead(ctx, id)
}

// lastDead returns the newest dead letter with id, driver.ErrNotFound if there is none, or the
// failure (named by op) of looking it up.
func (b *Backend) lastDead(ctx context.Context, op, id string) (*natsjs.RawStreamMsg, error) {
	raw, err := b.dead.GetLastMsgForSubject(ctx, b.deadPrefix+token(id))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return nil, driver.ErrNotFound
	}
	if err != nil {
		return nil, b.fail(ctx, op+" "+id, err)
	}
	return raw, nil
}
