package jetstream_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/corral-go/corral/queue"
	"github.com/corral-go/corral/queue/jetstream"
	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
)

// handleOne enqueues one job on q, handles it, and closes q (which waits for the removal of the
// job's state record). It returns the state stream's last sequence as the handler ran: its
// record written, not yet removed.
func handleOne(t *testing.T, ctx context.Context, q *queue.Queue[int], js natsjs.JetStream, name string) uint64 {
	t.Helper()
	_, err := q.Enqueue(ctx, 1, queue.WithID("one"))
	require.NoError(t, err)
	type seen struct {
		last uint64
		err  error
	}
	done := make(chan seen, 1)
	c, err := q.Consume(ctx, func(ctx context.Context, _ queue.Job[int]) error {
		st, err := js.Stream(ctx, "CORRAL_"+name+"_STATE")
		if err != nil {
			done <- seen{err: err}
			return nil
		}
		done <- seen{last: st.CachedInfo().State.LastSeq}
		return nil
	})
	require.NoError(t, err)
	var got seen
	select {
	case got = <-done:
	case <-ctx.Done():
		t.Fatal("the job was not handled")
	}
	require.NoError(t, got.err)
	_, err = c.Close(ctx)
	require.NoError(t, err)
	require.NoError(t, q.Close(ctx))
	return got.last
}

// stateStream returns the queue's state stream's info (its state filtered to the jobs'
// records) and the jobs' records in it.
func stateStream(t *testing.T, ctx context.Context, js natsjs.JetStream, name string) (*natsjs.StreamInfo, []*natsjs.RawStreamMsg) {
	t.Helper()
	st, err := js.Stream(ctx, "CORRAL_"+name+"_STATE")
	require.NoError(t, err)
	info, err := st.Info(ctx, natsjs.WithSubjectFilter("corral."+name+".state.>"))
	require.NoError(t, err)
	record := regexp.MustCompile(`\.state\.[0-9]+$`)
	var records []*natsjs.RawStreamMsg
	for subj := range info.State.Subjects {
		if record.MatchString(subj) {
			raw, err := st.GetLastMsgForSubject(ctx, subj)
			if errors.Is(err, natsjs.ErrMsgNotFound) {
				continue // an empty record whose TTL passed since the listing
			}
			require.NoError(t, err)
			records = append(records, raw)
		}
	}
	return info, records
}

// On nats-server 2.11 or later a new queue's state stream allows per-message TTLs, and a job's
// record is dropped by one publish: an empty record with a TTL, which the server removes by
// itself, sent without waiting for an answer, and Close publishes one more, on a subject of its
// own, and waits for it. On an older server the record is purged. The stream's last sequence
// tells them apart whether or not the TTLs have passed: two more messages after the handler
// ran, or none.
func TestDroppedRecord(t *testing.T) {
	nc, js, name, ctx := oneServer(t)
	q, err := queue.New[int](ctx, queue.WithBackend(jetstream.New(js, name, jetstream.WithMemoryStorage())))
	require.NoError(t, err)
	ttl := natstest.VersionAtLeast(nc, 2, 11, 0)
	before, _ := stateStream(t, ctx, js, name)
	require.Equal(t, ttl, before.Config.AllowMsgTTL, "per-message TTLs on the state stream")

	want := handleOne(t, ctx, q, js, name) // the record written as the handler started
	after, records := stateStream(t, ctx, js, name)
	if ttl {
		want += 2 // and the empty one that replaced it, and Close's
	}
	require.Equal(t, want, after.State.LastSeq, "messages published to the state stream")
	for _, raw := range records {
		if !ttl || string(raw.Data) != "{}" || raw.Header.Get("Nats-TTL") == "" {
			t.Errorf("record %s left after the job was acked: %s %v", raw.Subject, raw.Data, raw.Header)
		}
	}
}

// A queue whose state stream an earlier version made keeps purging records: the server refuses
// to turn per-message TTLs off again, so turning them on would lock that version's processes
// out of the queue. WithReconfigure turns them on (on a server that has them), and then an
// Open that asks for them off (an earlier version's) fails.
func TestRecordTTLOfExistingQueue(t *testing.T) {
	nc, js, name, ctx := oneServer(t)
	earlier := natsjs.StreamConfig{ // as v0.2.0 made it
		Name:              "CORRAL_" + name + "_STATE",
		Description:       "corral queue " + name + ": settings and retry state of jobs",
		Subjects:          []string{"corral." + name + ".state.>", "corral." + name + ".mark.>", "corral." + name + ".settings"},
		Retention:         natsjs.LimitsPolicy,
		MaxMsgsPerSubject: 1,
		Storage:           natsjs.MemoryStorage,
		Replicas:          1,
	}
	_, err := js.CreateStream(ctx, earlier)
	require.NoError(t, err)

	q, err := queue.New[int](ctx, queue.WithBackend(jetstream.New(js, name, jetstream.WithMemoryStorage())))
	require.NoError(t, err)
	before, _ := stateStream(t, ctx, js, name)
	require.False(t, before.Config.AllowMsgTTL, "per-message TTLs turned on without WithReconfigure")
	running := handleOne(t, ctx, q, js, name)
	after, records := stateStream(t, ctx, js, name)
	require.Equal(t, running, after.State.LastSeq, "messages published to the state stream after the handler ran")
	require.Empty(t, records, "records left after the job was acked")

	q, err = queue.New[int](ctx, queue.WithBackend(jetstream.New(js, name, jetstream.WithMemoryStorage(), jetstream.WithReconfigure())))
	require.NoError(t, err)
	require.NoError(t, q.Close(ctx))
	reconfigured, _ := stateStream(t, ctx, js, name)
	ttl := natstest.VersionAtLeast(nc, 2, 11, 0)
	require.Equal(t, ttl, reconfigured.Config.AllowMsgTTL, "per-message TTLs after WithReconfigure")
	_, err = js.CreateOrUpdateStream(ctx, earlier)
	if ttl {
		require.Error(t, err, "an earlier version's Open turned per-message TTLs off")
	} else {
		require.NoError(t, err)
	}
}
