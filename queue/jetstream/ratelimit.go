package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// rateSubject is the subject of the rate limit's record in the state stream: the starts taken
// within the window, oldest first.
func (b *Backend) rateSubject() string { return b.statePrefix + "rate" }

// TakeStart implements driver.RateLimiter with a sliding window kept in the state stream: one
// record of the starts taken, written compare-and-set on its sequence, so that two processes
// never both take the last start of a window. The starts are dated by the clock of the process
// that takes them: the limit is exact when the processes' clocks agree, and off by their skew
// (a window shifted by it) when they do not.
func (b *Backend) TakeStart(ctx context.Context, n int, per time.Duration) (bool, time.Duration, error) {
	ctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	defer cancel()
	if err != nil {
		return false, 0, err
	}
	subj := b.rateSubject()
	for {
		var starts []time.Time
		var seq uint64
		raw, err := b.state.GetLastMsgForSubject(ctx, subj)
		switch {
		case errors.Is(err, natsjs.ErrMsgNotFound):
		case err != nil:
			return false, 0, b.fail(ctx, "take a start", err)
		default:
			seq = raw.Sequence
			if err := json.Unmarshal(raw.Data, &starts); err != nil {
				return false, 0, fmt.Errorf("jetstream: rate limit record: %w", err)
			}
		}
		now := time.Now()
		i := 0
		for i < len(starts) && !starts[i].After(now.Add(-per)) {
			i++
		}
		starts = starts[i:]
		if len(starts) >= n {
			return false, starts[len(starts)-n].Add(per).Sub(now), nil
		}
		data, err := json.Marshal(append(starts, now))
		if err != nil {
			return false, 0, err
		}
		took, err := b.publishIfLast(ctx, "take a start", subj, data, seq)
		if err != nil || took {
			return took, 0, err
		}
		// Another process took a start meanwhile: look again.
	}
}
