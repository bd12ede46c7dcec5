package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue/driver"
)

// nanos returns t as a string of Unix nanoseconds, "0" for the zero time.
func nanos(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

// parseNanos is nanos reversed.
func parseNanos(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Enqueue implements driver.Backend in one script: the dedup check (the stored job, and the IDs
// within the horizon), the unique key (held by a stored job, or for its period after), the capacity (a counter of stored jobs, with the overflow policy) and
// the store are one atomic step. Under Block it waits for room, asking again at each local
// settle and every poll interval.
func (b *Backend) Enqueue(ctx context.Context, m driver.Message) (driver.EnqueueResult, error) {
	if err := b.life.Check(calls); err != nil {
		return driver.EnqueueResult{}, err
	}
	if m.EnqueuedAt.IsZero() {
		m.EnqueuedAt = time.Now()
	}
	var nb int64 // NotBefore rounded up to the millisecond: the job is not ready before it
	if !m.NotBefore.IsZero() {
		nb = m.NotBefore.Add(time.Millisecond - time.Nanosecond).UnixMilli()
	}
	for {
		w := b.waiter()
		v, err := b.run(ctx, "enqueue", enqueueScript, m.ID, m.Key, m.Body, nanos(m.EnqueuedAt), nb,
			nanos(m.NotBefore), nanos(m.StartBy), b.cfg.DedupHorizon.Milliseconds(), b.cfg.Capacity,
			b.cfg.Overflow.String(), b.cfg.DeadLetterLimit, nanos(time.Now()), m.Version, evictedJSON(),
			headersJSON(m.Headers), m.Unique, millis(m.UniqueFor))
		if err != nil {
			return driver.EnqueueResult{}, err
		}
		r, _ := v.([]any)
		status, _ := r[0].(string)
		switch status {
		case "ok":
			b.signal()
			return driver.EnqueueResult{Evicted: nilIfEmpty(strs(r[1])), DeadEvicted: nilIfEmpty(strs(r[2]))}, nil
		case "dup":
			return driver.EnqueueResult{}, driver.ErrDuplicate
		case "unique":
			holder, _ := r[3].(string)
			return driver.EnqueueResult{Existing: holder}, driver.ErrNotUnique
		case "dropped":
			return driver.EnqueueResult{}, driver.ErrDropped
		}
		if b.cfg.Overflow != driver.Block {
			return driver.EnqueueResult{}, driver.ErrFull
		}
		if err := b.wait(ctx, w, b.o.pollInterval); err != nil {
			return driver.EnqueueResult{}, err
		}
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// fill fills d from the receive script's reply {id, key, body, enq, nbn, sb, att, gen, dlv,
// ver, hdr, snz, due, more}.
func fill(d *driver.Delivery, r []string) error {
	if len(r) < 14 {
		return errors.New("redis: receive: short reply")
	}
	att, _ := strconv.Atoi(r[6])
	gen, _ := strconv.ParseUint(r[7], 10, 64)
	dlv, _ := strconv.Atoi(r[8])
	ver, _ := strconv.Atoi(r[9])
	snz, _ := strconv.Atoi(r[11])
	*d = driver.Delivery{
		Message: driver.Message{
			ID: r[0], Key: r[1], Body: []byte(r[2]), EnqueuedAt: parseNanos(r[3]),
			NotBefore: parseNanos(r[4]), StartBy: parseNanos(r[5]), Attempt: att + 1, Version: ver,
			Snoozes: snz,
		},
		Seq: gen, Redelivered: dlv > 1,
	}
	var err error
	d.Headers, err = parseHeaders(r[10])
	return err
}

// settled returns the error of a settling script's reply: ErrLeaseLost for 0 or nil.
func settled(v any, err error) error {
	if err != nil {
		return err
	}
	if n, ok := v.(int64); !ok || n == 0 {
		return driver.ErrLeaseLost
	}
	return nil
}

func gen(d *driver.Delivery) string { return strconv.FormatUint(d.Seq, 10) }

// jsonNow returns the time now as encoding/json writes a time.Time.
func jsonNow() string {
	j, _ := json.Marshal(time.Now())
	return string(j)
}

// evictedJSON returns the history entry of a job evicted now: Number 0, no run.
func evictedJSON() []byte {
	now := time.Now()
	j, _ := json.Marshal(driver.Attempt{Start: now, End: now, Error: driver.ErrEvicted.Error()})
	return j
}

// headersJSON returns a job's headers as stored in its hash (hdr): a JSON object, "" for none.
func headersJSON(h map[string]string) string {
	if len(h) == 0 {
		return ""
	}
	j, _ := json.Marshal(h) // a map of strings always encodes
	return string(j)
}

// parseHeaders is headersJSON reversed: nil for "" (none, or a job stored before headers).
func parseHeaders(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return nil, fmt.Errorf("redis: job headers: %w", err)
	}
	return h, nil
}

// leaseExpiredJSON is queue.ErrLeaseExpired's text as a JSON string.
var leaseExpiredJSON = func() string { j, _ := json.Marshal(driver.ErrLeaseExpired.Error()); return string(j) }()

// startedOnReceive is the Token of a delivery of ReceiveStart: its start was recorded as it
// was received.
type startedOnReceive struct{}

// Start implements driver.Backend: it counts the attempt in the job's hash (not the stream's
// delivery counter, which counts deliveries that never reached a handler), and records when
// the run started: a Receive that takes the job back after its lease expired, with no settle
// of this run, records the run's history entry (Error "queue: lease expired", End when it
// was taken back).
func (b *Backend) Start(ctx context.Context, d *driver.Delivery) error {
	return settled(b.run(ctx, "start", startScript, d.ID, gen(d), jsonNow()))
}

// Extend implements driver.Backend: XCLAIM to this consumer resets the pending entry's idle
// time, which is the lease: it is renewed to the queue's lease, the idle time after which
// another receiver reclaims the entry (XAUTOCLAIM), one setting shared by every consumer,
// not a property of a delivery. A consumer's lease is the queue's (CheckLease saw to it), so
// Extend honours it; a lease other than the one this Backend's CheckLease agreed is an error
// naming both, and nothing is renewed.
func (b *Backend) Extend(ctx context.Context, d *driver.Delivery, lease time.Duration) error {
	b.mu.Lock()
	agreed := b.lease
	b.mu.Unlock()
	if agreed != 0 && lease.Milliseconds() != agreed.Milliseconds() {
		return fmt.Errorf("redis: extend %s: lease %v differs from the queue's %v: a lease is one setting of the queue", d.ID, lease, agreed)
	}
	v, err := b.run(ctx, "extend", extendScript, d.ID, gen(d), b.consumer)
	if v == int64(2) {
		return driver.ErrCanceled // see admin.go
	}
	return settled(v, err)
}

// Ack implements driver.Backend: XACK, XDEL and the job's deletion, in one script, which also
// hands the job's ordering key to its next job. It wakes a waiting Receive only if that made
// a job ready: an ack alone gives a receiver nothing to find, and the acking worker asks
// again itself.
func (b *Backend) Ack(ctx context.Context, d *driver.Delivery) error {
	v, err := b.run(ctx, "ack", ackScript, d.ID, gen(d))
	if err = settled(v, err); err != nil {
		return err
	}
	if v == int64(2) {
		b.signal()
	} else {
		b.roomFreed()
	}
	return nil
}

// Nack implements driver.Backend: the entry is acked and deleted, the attempt appended to the
// job's history, and the job put in the delayed set (or back in the stream), in one script. A
// snooze also gives back the attempt, as Release does, and counts in the job's snoozes.
func (b *Backend) Nack(ctx context.Context, d *driver.Delivery, delay time.Duration, a driver.Attempt) error {
	aj, err := json.Marshal(a)
	if err != nil {
		return err
	}
	mode := "0"
	if a.Snoozed {
		mode = "2"
	}
	err = settled(b.run(ctx, "nack", requeueScript, d.ID, gen(d), millis(delay), aj, mode,
		nanos(time.Now()), b.cfg.DeadLetterLimit))
	if err == nil {
		b.signal()
	}
	return err
}

// millis is d in whole milliseconds for the scripts, rounded up, so that no delay, unique
// period or rate window ends before d.
func millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - time.Nanosecond) / time.Millisecond)
}

// Release implements driver.Backend: the job goes back to the stream (or, after a delay, to the
// delayed set), its attempt un-counted if Start was called on this delivery.
func (b *Backend) Release(ctx context.Context, d *driver.Delivery, delay time.Duration) error {
	err := settled(b.run(ctx, "release", requeueScript, d.ID, gen(d), millis(delay), "", "1",
		nanos(time.Now()), b.cfg.DeadLetterLimit))
	if err == nil {
		b.signal()
	}
	return err
}

// Bury implements driver.Backend: the job moves to the dead-letter stream with its reason and
// history, the oldest dead letters beyond the limit are deleted, in one script. An Attempt
// of Number 0 with no Error (nothing ran) adds no history entry. A delivery of ReceiveStart
// buried with an Attempt of Number 0 (no run on it) gives back the attempt its receive
// counted (see ReceiveStart).
func (b *Backend) Bury(ctx context.Context, d *driver.Delivery, reason driver.Reason, a driver.Attempt) (driver.BuryResult, error) {
	aj, err := json.Marshal(a)
	if err != nil {
		return driver.BuryResult{}, err
	}
	if a.Number == 0 && a.Error == "" {
		aj = nil // nothing ran: no history entry
	}
	unstart := "0"
	if _, ok := d.Token.(startedOnReceive); ok && a.Number == 0 {
		unstart = "1" // no run on d: give back the attempt ReceiveStart counted
	}
	v, err := b.run(ctx, "bury", buryScript, d.ID, gen(d), string(reason), aj, nanos(time.Now()), b.cfg.DeadLetterLimit, unstart)
	if err != nil {
		return driver.BuryResult{}, err
	}
	if v == nil {
		return driver.BuryResult{}, driver.ErrLeaseLost
	}
	b.signal()
	return driver.BuryResult{DeadEvicted: nilIfEmpty(strs(v))}, nil
}

// DeadLetters implements driver.Backend: the dead-letter stream, oldest first, read 100 at a
// time.
func (b *Backend) DeadLetters(ctx context.Context) iter.Seq2[driver.DeadMessage, error] {
	calls.Made(b.client != nil)
	return func(yield func(driver.DeadMessage, error) bool) {
		if err := b.life.Check(calls); err != nil {
			yield(driver.DeadMessage{}, err)
			return
		}
		start := "-"
		for {
			cctx, cancel := b.call(ctx)
			es, err := within(&b.xs, cctx, func(cctx context.Context) ([]goredis.XMessage, error) {
				return b.client.XRangeN(cctx, b.prefix+"x", start, "+", 100).Result()
			})
			if err != nil {
				b.reloadIfGone(cctx, err)
				err = calls.Fail(cctx, "dead letters", err)
			}
			cancel()
			if err != nil {
				yield(driver.DeadMessage{}, err)
				return
			}
			for _, e := range es {
				if !yield(deadMessage(e.Values), nil) {
					return
				}
			}
			if len(es) < 100 {
				return
			}
			start = "(" + es[len(es)-1].ID
		}
	}
}

func deadMessage(f map[string]any) driver.DeadMessage {
	s := func(k string) string { v, _ := f[k].(string); return v }
	att, _ := strconv.Atoi(s("att"))
	ver, _ := strconv.Atoi(s("ver")) // 0 for a job stored before versions
	dm := driver.DeadMessage{
		Message: driver.Message{
			ID: s("id"), Key: s("key"), Body: []byte(s("body")), EnqueuedAt: parseNanos(s("enq")),
			NotBefore: parseNanos(s("nbn")), StartBy: parseNanos(s("sb")), Attempt: att, Version: ver,
		},
		Reason: driver.Reason(s("reason")), At: parseNanos(s("at")),
	}
	dm.Headers, _ = parseHeaders(s("hdr")) // written by headersJSON, as the history by json.Marshal
	if h := s("hist"); h != "" {
		_ = json.Unmarshal([]byte(h), &dm.History)
	}
	return dm
}

// Redrive implements driver.Backend.
func (b *Backend) Redrive(ctx context.Context, id string) error {
	if err := b.life.Check(calls); err != nil {
		return err
	}
	v, err := b.run(ctx, "redrive", redriveScript, id)
	if err != nil {
		return err
	}
	switch v {
	case "missing":
		return driver.ErrNotFound
	case "dup":
		return driver.ErrDuplicate
	}
	b.signal()
	return nil
}

// Purge implements driver.Backend.
func (b *Backend) Purge(ctx context.Context, id string) error {
	if err := b.life.Check(calls); err != nil {
		return err
	}
	v, err := b.run(ctx, "purge", purgeScript, id)
	if err != nil {
		return err
	}
	if n, _ := v.(int64); n == 0 {
		return driver.ErrNotFound
	}
	return nil
}

// Stats implements driver.Backend, from one script's reading of the counters and sets. On a
// server that lost the queue's keys, it records them again, as Receive does.
func (b *Backend) Stats(ctx context.Context) (driver.Stats, error) {
	if err := b.life.Check(calls); err != nil {
		return driver.Stats{}, err
	}
	v, err := b.runHealed(ctx, ctx, "stats", statsScript)
	if err != nil {
		return driver.Stats{}, err
	}
	r := strs(v)
	n := func(i int) int { x, _ := strconv.Atoi(r[i]); return x }
	st := driver.Stats{InFlight: n(1), Delayed: n(2) + n(3), Dead: n(4), Oldest: parseNanos(r[5]), Paused: n(6) == 1}
	st.Ready = max(n(0)-st.InFlight-st.Delayed, 0)
	return st, nil
}
