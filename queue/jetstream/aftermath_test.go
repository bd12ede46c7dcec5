package jetstream_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

// Ack leaves the removal of the job's state record to the background (see aftermath.go), and
// the queue's Close waits for it: after Close, none of the handled jobs has a record left (on
// nats-server 2.11 or later, each has the empty record that replaced it, which the server
// removes a second later), and none has a tombstone missing on a 2.9 server.
func TestAckRemovesRecordsByClose(t *testing.T) {
	nc, js, name, ctx := oneServer(t)
	q, err := queue.New[int](ctx, queue.WithBackend(jetstream.New(js, name, jetstream.WithMemoryStorage())))
	require.NoError(t, err)
	const jobs = 200
	for i := range jobs {
		_, err := q.Enqueue(ctx, i, queue.WithID(strconv.Itoa(i)))
		require.NoError(t, err)
	}
	var handled atomic.Int64
	done := make(chan struct{})
	c, err := q.Consume(ctx, func(context.Context, queue.Job[int]) error {
		if handled.Add(1) == jobs {
			close(done)
		}
		return nil
	}, queue.WithWorkers(8))
	require.NoError(t, err)
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("handled %d of %d jobs", handled.Load(), jobs)
	}
	_, err = c.Close(ctx)
	require.NoError(t, err)
	require.NoError(t, q.Close(ctx))

	state, err := js.Stream(ctx, "CORRAL_"+name+"_STATE")
	require.NoError(t, err)
	info, err := state.Info(ctx, natsjs.WithSubjectFilter("corral."+name+".state.>"))
	require.NoError(t, err)
	record := regexp.MustCompile(`\.state\.[0-9]+$`)
	ttl := natstest.VersionAtLeast(nc, 2, 11, 0)
	for subj := range info.State.Subjects {
		if !record.MatchString(subj) {
			continue
		}
		raw, err := state.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			continue // an empty record whose TTL passed since the listing
		}
		require.NoError(t, err)
		if !ttl || string(raw.Data) != "{}" || raw.Header.Get("Nats-TTL") == "" {
			t.Errorf("state record %s left after the queue closed: %s %v", subj, raw.Data, raw.Header)
		}
	}
	if natstest.VersionAtLeast(nc, 2, 10, 0) {
		return
	}
	done2, err := js.Stream(ctx, "CORRAL_"+name+"_DONE")
	require.NoError(t, err)
	require.Equal(t, uint64(jobs), done2.CachedInfo().State.Msgs, "tombstones of the acked jobs")
}
