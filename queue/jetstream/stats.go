package jetstream

import (
	"context"
	"fmt"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/queue/driver"
)

// Stats implements driver.Backend from stream and consumer info and the markers of delayed and
// handed-back jobs: InFlight is the consumer's ack pending count less the jobs handed back and
// the jobs prefetched by this process (jobs prefetched by other processes count as in flight),
// Delayed counts jobs whose start time or retry delay has not come, Dead the dead-letter
// stream's size, Oldest the time the oldest stored job was published, and Paused whether the
// pause record is there (see admin.go). On its way it tidies the queue (see tidy).
func (b *Backend) Stats(ctx context.Context) (driver.Stats, error) {
	var s driver.Stats
	ctx, cancel, err := b.life.Begin(ctx, calls, b.o.callTimeout)
	defer cancel()
	if err != nil {
		return s, err
	}
	b.statsMu.Lock()
	defer b.statsMu.Unlock()
	wi, ci, err := b.tidy(ctx)
	if err != nil {
		return s, err
	}
	di, err := b.statDead.Info(ctx)
	if err != nil {
		return s, b.fail(ctx, "stats", err)
	}
	si, err := b.statState.Info(ctx, natsjs.WithSubjectFilter(b.markPrefix+">"))
	if err != nil {
		return s, b.fail(ctx, "stats", err)
	}
	marks := b.countMarks(si.State.Subjects)
	_, s.Paused = si.State.Subjects[b.pauseSubject()]
	stored := int(wi.State.Msgs)
	s.Delayed = min(marks.waiting+marks.delayed, stored)
	s.InFlight = max(ci.NumAckPending-marks.delayed-marks.ready-int(b.bufFresh.Load()), 0)
	s.InFlight = min(s.InFlight, stored-s.Delayed)
	s.Ready = stored - s.Delayed - s.InFlight
	s.Dead = int(di.State.Msgs)
	if stored > 0 {
		s.Oldest = wi.State.FirstTime
	}
	return s, nil
}

// tidy reads the work stream's and the consumer's info, deletes the settled jobs the broker
// keeps and publishes again the ones the consumer skipped (see resurrect.go), asks the leader
// of a consumer blind to stored jobs to step down (see blind.go), and returns the info, the
// stream's as it is after. b.statsMu held.
func (b *Backend) tidy(ctx context.Context) (*natsjs.StreamInfo, *natsjs.ConsumerInfo, error) {
	wi, err := b.statWork.Info(ctx)
	if err != nil {
		return nil, nil, b.fail(ctx, "stats", err)
	}
	ci, err := b.statCons.Info(ctx)
	if err != nil {
		return nil, nil, b.fail(ctx, "stats", err)
	}
	b.noteLeader(ci)
	removed, err := b.removeAcked(ctx, wi, ci)
	if err != nil {
		return nil, nil, b.fail(ctx, "stats", err)
	}
	swept, err := b.sweep(ctx, wi, ci)
	if err != nil {
		return nil, nil, err
	}
	b.unblind(ctx, wi, ci)
	if removed || swept {
		if wi, err = b.statWork.Info(ctx); err != nil {
			return nil, nil, b.fail(ctx, "stats", err)
		}
	}
	return wi, ci, nil
}

// tidyIdle is tidy for a Receive that waited a call timeout for a job, at most once per lease
// in a process: without it, a job the consumer skipped would wait for someone to ask for Stats.
func (b *Backend) tidyIdle(ctx context.Context, lease time.Duration) {
	now := time.Now()
	next := b.tidyAt.Load()
	if now.UnixNano() < next || !b.tidyAt.CompareAndSwap(next, now.Add(lease).UnixNano()) {
		return
	}
	ctx, cancel := b.req(ctx)
	defer cancel()
	b.statsMu.Lock()
	defer b.statsMu.Unlock()
	_, _, _ = b.tidy(ctx) // a failure waits for the next tidy; Receive reports an unreachable broker itself
}

// markCounts counts the markers of jobs by kind (see markWaiting, markDelayed, markReady).
type markCounts struct {
	waiting int // not delivered yet, start time to come: delayed, not ack pending
	delayed int // handed back with a delay: delayed, but ack pending
	ready   int // handed back ready: ack pending
}

// countMarks counts the markers among subjects, the subjects of the state stream under
// markPrefix.
func (b *Backend) countMarks(subjects map[string]uint64) markCounts {
	var c markCounts
	for subj := range subjects {
		kind, _, _ := strings.Cut(strings.TrimPrefix(subj, b.markPrefix), ".")
		switch kind {
		case markWaiting:
			c.waiting++
		case markDelayed:
			c.delayed++
		case markReady:
			c.ready++
		}
	}
	return c
}

// removeAcked deletes the jobs at or below the consumer's ack floor. Every one of them was
// acked, so a work-queue stream should not hold it, but a server restart can leave one behind
// (the ack persisted, the removal not), and the consumer never delivers it again. It does so
// only once the broker served calmly (see calm), when the consumer's info can be trusted: in
// the fault suite a 2.9 server's consumer reported, seconds after its restart, an ack floor at
// the stream's last sequence and nothing pending or ack pending, and then delivered two of the
// stored jobs again. Nothing on a queue replicated on a 2.9 server (see ackFloor): the sweeps
// remove the jobs the tombstones show acked. b.statsMu held.
func (b *Backend) removeAcked(ctx context.Context, wi *natsjs.StreamInfo, ci *natsjs.ConsumerInfo) (bool, error) {
	floor := b.ackFloor(ci)
	if wi.State.Msgs == 0 || floor < wi.State.FirstSeq || !b.calm(ci.Config.AckWait) {
		return false, nil
	}
	if err := b.statWork.Purge(ctx, natsjs.WithPurgeSequence(floor+1)); err != nil {
		return false, fmt.Errorf("remove acked jobs: %w", err)
	}
	return true, nil
}
