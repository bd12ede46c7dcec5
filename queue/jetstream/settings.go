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

// settings are the queue's settings that every process must share: they
// live in one record of the state stream (corral.<name>.settings), written
// by the first process that opens the queue and compared by every later
// one, so that no process can weaken another's guarantee by opening the
// queue with, say, a shorter dedup horizon.
type settings struct {
	Capacity        int           `json:"capacity"`
	Overflow        string        `json:"overflow"`
	DedupHorizon    time.Duration `json:"dedup_horizon"`
	DeadLetterLimit int           `json:"dead_letter_limit"`
	Replicas        int           `json:"replicas"`
	Storage         string        `json:"storage"`
	// Lease is the consumer's AckWait, set by the first CheckLease; zero
	// until a consumer started.
	Lease time.Duration `json:"lease,omitempty"`
}

func (b *Backend) settingsFor(cfg driver.Config) settings {
	storage := "file"
	if b.o.memory {
		storage = "memory"
	}
	c := driver.SharedOf(cfg)
	return settings{
		Capacity: c.Capacity, Overflow: c.Overflow, DedupHorizon: c.DedupHorizon,
		DeadLetterLimit: c.DeadLetterLimit, Replicas: b.o.replicas, Storage: storage,
	}
}

// diff returns the first setting in which s (this process's) and q (the
// queue's) differ, as a *driver.SettingsError, or nil (see driver.Shared.Diff).
func (s settings) diff(q settings) error {
	return s.shared().Diff(q.shared(),
		driver.Setting{Name: "replicas", Mine: s.Replicas, Queue: q.Replicas},
		driver.Setting{Name: "storage", Mine: s.Storage, Queue: q.Storage})
}

// shared returns the settings that every backend shares.
func (s settings) shared() driver.Shared {
	return driver.Shared{Capacity: s.Capacity, Overflow: s.Overflow, DedupHorizon: s.DedupHorizon,
		DeadLetterLimit: s.DeadLetterLimit, Lease: s.Lease}
}

func (b *Backend) settingsSubject() string { return "corral." + b.name + ".settings" }

// loadSettings returns the queue's settings record and its sequence in the
// state stream (0 and no error if there is none).
func (b *Backend) loadSettings(ctx context.Context, state natsjs.Stream) (settings, uint64, error) {
	var s settings
	raw, err := retried(ctx, b, known(func(ctx context.Context) (*natsjs.RawStreamMsg, error) {
		return state.GetLastMsgForSubject(ctx, b.settingsSubject())
	}))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return s, 0, nil
	}
	if err != nil {
		return s, 0, b.fail(ctx, "read the queue's settings", err)
	}
	if err := json.Unmarshal(raw.Data, &s); err != nil {
		return s, 0, fmt.Errorf("jetstream: queue %s: settings record: %w", b.name, err)
	}
	return s, raw.Sequence, nil
}

// storeSettings writes s as the queue's settings if the record is still at
// seq (0: there is none), and reports false if another process wrote it
// first.
func (b *Backend) storeSettings(ctx context.Context, s settings, seq uint64) (bool, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return false, err
	}
	msg := &nats.Msg{Subject: b.settingsSubject(), Data: data}
	// A try whose answer was lost may have stored the record: the next finds the sequence
	// moved on, and agree reads the record again.
	_, err = retried(ctx, b, known(func(ctx context.Context) (*natsjs.PubAck, error) {
		return b.js.PublishMsg(ctx, msg, natsjs.WithExpectLastSequencePerSubject(seq))
	}))
	switch apiCode(err) {
	case codeWrongLast, codeWrongLR:
		return false, nil
	case 0:
		if err != nil {
			return false, b.fail(ctx, "write the queue's settings", err)
		}
		return true, nil
	}
	return false, b.fail(ctx, "write the queue's settings", err)
}

// agree makes the queue's settings record agree with mine: it writes mine
// if there is no record (or WithReconfigure was given), and else fails if
// they differ. It returns the settings in force. Two processes racing to
// write the first record are ordered by the record's sequence.
func (b *Backend) agree(ctx context.Context, state natsjs.Stream, mine settings) (settings, error) {
	for range 10 {
		cur, seq, err := b.loadSettings(ctx, state)
		if err != nil {
			return cur, err
		}
		if seq != 0 {
			if mine.Lease == 0 {
				mine.Lease = cur.Lease // a lease is agreed at CheckLease
			}
			// The same settings, or the first lease to record: write it below.
			if err := mine.diff(cur); err == nil && (mine.Lease == cur.Lease || mine.Lease == 0) {
				return cur, nil
			} else if err != nil && !b.o.reconfigure {
				return cur, fmt.Errorf("jetstream: queue %s: %w (%s)", b.name, err, driver.ReconfigureHint)
			}
		}
		ok, err := b.storeSettings(ctx, mine, seq)
		if err != nil || ok {
			return mine, err
		}
	}
	return mine, fmt.Errorf("jetstream: queue %s: settings record kept changing", b.name)
}

// CheckLease implements driver.SharedLease: the lease is the consumer's
// AckWait, one for every process of the queue. The first consumer's lease
// is recorded; a consumer asking for another fails with an error naming
// both, unless the backend was created WithReconfigure, which sets the
// queue's lease to this one.
func (b *Backend) CheckLease(ctx context.Context, lease time.Duration) error {
	ctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	defer cancel()
	if err != nil {
		return err
	}
	return driver.AgreeLease(ctx, "jetstream", lease, &b.mu, &b.set, func(ctx context.Context, mine settings) (settings, error) {
		mine.Lease = lease
		return b.agree(ctx, b.state, mine)
	})
}
