package jetstream_test

// These tests pin the JetStream server behaviours the backend relies on, so that a server
// upgrade (or the older Debian server in CI) that changes one of them fails here, by name.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/corral-go/corral/queue/jetstream/internal/natstest"
	"github.com/corral-go/corral/queue/queuetest"
)

func TestMain(m *testing.M) {
	queuetest.ServeWorker(openFaultBackend) // returns at once unless this is a worker process
	goleak.VerifyTestMain(m)
}

func probeSetup(t *testing.T, cfg natsjs.StreamConfig) (context.Context, *nats.Conn, natsjs.JetStream, natsjs.Stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s := natstest.Start(t)
	nc := s.Connect(t)
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	p := natstest.Prefix(t)
	cfg.Name = p + cfg.Name
	for i, sub := range cfg.Subjects {
		cfg.Subjects[i] = p + "." + sub
	}
	st, err := js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), cfg.Name) })
	return ctx, nc, js, st
}

func TestSemanticsDedupAndDiscardNew(t *testing.T) {
	ctx, _, js, st := probeSetup(t, natsjs.StreamConfig{
		Name: "S", Subjects: []string{"q.>"}, Retention: natsjs.WorkQueuePolicy,
		MaxMsgs: 2, Discard: natsjs.DiscardNew, Duplicates: time.Minute,
	})
	subj := st.CachedInfo().Config.Subjects[0][:len(st.CachedInfo().Config.Subjects[0])-1] + "a"
	a1, err := js.Publish(ctx, subj, []byte("1"), natsjs.WithMsgID("id-1"))
	require.NoError(t, err)
	a2, err := js.Publish(ctx, subj, []byte("1"), natsjs.WithMsgID("id-1"))
	require.NoError(t, err)
	require.True(t, a2.Duplicate)
	require.Equal(t, a1.Sequence, a2.Sequence)
	_, err = js.Publish(ctx, subj, []byte("2"), natsjs.WithMsgID("id-2"))
	require.NoError(t, err)
	_, err = js.Publish(ctx, subj, []byte("3"), natsjs.WithMsgID("id-3"))
	var apiErr *natsjs.APIError
	require.True(t, errors.As(err, &apiErr), "err = %v", err)
	require.Equal(t, natsjs.ErrorCode(10077), apiErr.ErrorCode, "err = %v", err)
	// A full stream still answers "duplicate" for an ID it holds.
	a4, err := js.Publish(ctx, subj, []byte("1"), natsjs.WithMsgID("id-1"))
	require.NoError(t, err)
	require.True(t, a4.Duplicate)
}

func TestSemanticsTermRemovesFromWorkQueue(t *testing.T) {
	ctx, _, js, st := probeSetup(t, natsjs.StreamConfig{
		Name: "S", Subjects: []string{"q.>"}, Retention: natsjs.WorkQueuePolicy,
	})
	subj := st.CachedInfo().Config.Subjects[0][:len(st.CachedInfo().Config.Subjects[0])-1] + "a"
	for _, id := range []string{"a", "b", "c"} {
		_, err := js.Publish(ctx, subj, []byte(id), natsjs.WithMsgID(id))
		require.NoError(t, err)
	}
	c, err := st.CreateOrUpdateConsumer(ctx, natsjs.ConsumerConfig{
		Durable: "w", AckPolicy: natsjs.AckExplicitPolicy, AckWait: 300 * time.Millisecond,
	})
	require.NoError(t, err)
	b, err := c.Fetch(3, natsjs.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	var msgs []natsjs.Msg
	for m := range b.Messages() {
		msgs = append(msgs, m)
	}
	require.NoError(t, b.Error())
	require.Len(t, msgs, 3)
	require.NoError(t, msgs[0].DoubleAck(ctx))
	require.NoError(t, msgs[1].Term())
	start := time.Now()
	require.NoError(t, msgs[2].NakWithDelay(200*time.Millisecond))
	m, err := c.Next(natsjs.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	md, err := m.Metadata()
	require.NoError(t, err)
	require.Equal(t, uint64(2), md.NumDelivered)
	require.Equal(t, "c", string(m.Data()))
	require.NoError(t, m.DoubleAck(ctx))
	info, err := st.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(0), info.State.Msgs, "term and ack both remove from a work queue")
}

func TestSemanticsStoredIDAndKeyHead(t *testing.T) {
	ctx, _, js, st := probeSetup(t, natsjs.StreamConfig{
		Name: "S", Subjects: []string{"q.>"}, Retention: natsjs.WorkQueuePolicy,
	})
	base := st.CachedInfo().Config.Subjects[0]
	base = base[:len(base)-1]
	// "No message stored on this subject" is expected-last-subject-sequence 0.
	_, err := js.Publish(ctx, base+"k1.a", []byte("a"), natsjs.WithExpectLastSequencePerSubject(0))
	require.NoError(t, err)
	_, err = js.Publish(ctx, base+"k1.a", []byte("a"), natsjs.WithExpectLastSequencePerSubject(0))
	var apiErr *natsjs.APIError
	require.True(t, errors.As(err, &apiErr), "err = %v", err)
	require.Equal(t, natsjs.ErrorCode(10071), apiErr.ErrorCode, "err = %v", err)
	_, err = js.Publish(ctx, base+"k2.b", []byte("b"))
	require.NoError(t, err)
	_, err = js.Publish(ctx, base+"k1.c", []byte("c"))
	require.NoError(t, err)
	// The head of a key: first message at or after seq 0 on a wildcard subject.
	m, err := st.GetMsg(ctx, 0, natsjs.WithGetMsgSubject(base+"k1.*"))
	require.NoError(t, err)
	require.Equal(t, uint64(1), m.Sequence)
	require.NoError(t, st.DeleteMsg(ctx, 1))
	m, err = st.GetMsg(ctx, 0, natsjs.WithGetMsgSubject(base+"k1.*"))
	require.NoError(t, err)
	require.Equal(t, uint64(3), m.Sequence)
	_, err = st.GetMsg(ctx, 0, natsjs.WithGetMsgSubject(base+"k9.*"))
	require.ErrorIs(t, err, natsjs.ErrMsgNotFound)
}
