package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// A replicated 2.9 consumer can lead from a server whose replica of the work stream missed
// messages that the stream's leader stored (seen in the fault suite's pause of a cluster's
// leader: the continued server's replica stopped short of the last jobs). The consumer
// delivers from its own server's replica, so it counts nothing pending and never delivers
// them, though the stream holds them past every sequence it delivered. Stats and idle Receives
// notice that (see blind) and ask the consumer's leader to step down: another server leads it
// then, and delivers them if its replica has them.

// blind reports whether the consumer, as ci shows it, does not see jobs that the work stream,
// as wi (read from its leader first) shows it, holds past every sequence the consumer
// delivered: on a replicated queue, nothing pending nor ack pending, pull requests waiting, the
// broker calm (see calm), and so for two leases in a row, seen by looks at most two leases
// apart while the consumer delivered nothing. It is true at most once per four leases. Once
// the rest has held for two leases, it looks the first job past those sequences up: the
// stream's last sequence may be that of a job since removed. b.statsMu held.
func (b *Backend) blind(ctx context.Context, wi *natsjs.StreamInfo, ci *natsjs.ConsumerInfo) (bool, error) {
	lease := ci.Config.AckWait
	if b.o.replicas == 1 || wi.State.Msgs == 0 || wi.State.LastSeq <= ci.Delivered.Stream ||
		ci.NumPending > 0 || ci.NumAckPending > 0 || ci.NumWaiting == 0 || !b.calm(lease) {
		b.blindSince = time.Time{}
		return false, nil
	}
	now, last := time.Now(), b.blindSeen
	b.blindSeen = now
	// Seen blind since blindSince at looks two leases apart at most, delivering nothing.
	if b.blindSince.IsZero() || now.Sub(last) > 2*lease || ci.Delivered.Consumer != b.blindSeq {
		b.blindSince, b.blindSeq = now, ci.Delivered.Consumer
		return false, nil
	}
	if now.Sub(b.blindSince) <= 2*lease || now.Before(b.blindNext) {
		return false, nil
	}
	_, err := b.statWork.GetMsg(ctx, ci.Delivered.Stream+1, natsjs.WithGetMsgSubject(b.jobPrefix+">"))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		b.blindSince = time.Time{}
		return false, nil
	}
	if err != nil {
		return false, b.fail(ctx, "look past the consumer's deliveries", err)
	}
	b.blindNext = now.Add(4 * lease)
	return true, nil
}

// unblind asks the consumer's leader to step down if the consumer is blind (see blind), given
// the infos tidy read. An error leaves it to a later look. b.statsMu held.
func (b *Backend) unblind(ctx context.Context, wi *natsjs.StreamInfo, ci *natsjs.ConsumerInfo) {
	if blind, err := b.blind(ctx, wi, ci); err == nil && blind {
		_ = b.stepDown(ctx)
	}
}

// stepDown asks the consumer's leader to step down; another server is elected to lead it.
func (b *Backend) stepDown(ctx context.Context) error {
	raw, err := b.nc.RequestWithContext(ctx, b.apiPrefix()+"CONSUMER.LEADER.STEPDOWN."+b.workStream+"."+b.consumerName, nil)
	if err != nil {
		return b.fail(ctx, "consumer leader step-down", err)
	}
	var resp struct {
		Error *natsjs.APIError `json:"error"`
	}
	if err := json.Unmarshal(raw.Data, &resp); err != nil {
		return fmt.Errorf("jetstream: consumer leader step-down: %w", err)
	}
	if resp.Error != nil {
		return fmt.Errorf("jetstream: consumer leader step-down: %w", resp.Error)
	}
	b.stepDowns.Add(1)
	b.restless() // an election follows
	return nil
}

// apiPrefix is the subject prefix of the JetStream API requests of b.js, ending with a dot.
func (b *Backend) apiPrefix() string {
	o := b.js.Options()
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		if o.APIPrefix[len(o.APIPrefix)-1] != '.' {
			return o.APIPrefix + "."
		}
		return o.APIPrefix
	}
	return natsjs.DefaultAPIPrefix
}
