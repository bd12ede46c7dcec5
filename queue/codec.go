package queue

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/corral-go/corral/internal/panics"
	"github.com/corral-go/corral/queue/driver"
)

// Codec encodes payloads for backends that store bytes. A Codec must be
// safe for concurrent use.
type Codec[T any] interface {
	// Marshal encodes v, a payload given to Enqueue. An error fails that
	// Enqueue, and nothing is stored.
	Marshal(v T) ([]byte, error)
	// Unmarshal decodes data for a delivery. An error (or a panic)
	// dead-letters the job with [ReasonDecode] without running a
	// handler.
	Unmarshal(data []byte) (T, error)
}

// decode returns the payload of m.
func (q *Queue[T]) decode(m *driver.Message) (T, error) {
	if q.values {
		v, ok := m.Value.(T)
		if !ok && m.Value != nil {
			var zero T
			return zero, fmt.Errorf("queue: payload is %T, want %T", m.Value, zero)
		}
		return v, nil
	}
	return q.unmarshal(m.Body)
}

// unmarshal decodes data with the codec, and returns a panic of the codec
// as an error: a payload that makes the codec panic fails to decode like any
// bad payload, and its job is dead-lettered (see worker.handle), instead of
// the panic taking down the worker that holds the job, over and over at
// each redelivery.
func (q *Queue[T]) unmarshal(data []byte) (v T, err error) {
	var catch panics.Catcher
	defer func() {
		if p := catch.Panic; p != nil {
			err = fmt.Errorf("queue: codec panicked decoding the payload: %v\n%s", p.Value, p.Stack)
		}
	}()
	defer catch.Recover()
	v, err = q.codec.Unmarshal(data)
	catch.Returned()
	return v, err
}

// job fills *j with the job that m carries, its payload decoded (upgraded,
// if of an older version: see WithUpgrade), and returns the decode error (j
// holds the rest of m all the same). A payload of a version the queue does
// not understand is not decoded: the error says so.
func (q *Queue[T]) job(m *driver.Message, j *Job[T]) error {
	var (
		p   T
		err error
	)
	switch {
	case m.Version == q.vers.Current:
		p, err = q.decode(m)
	case q.vers.Understands(m.Version):
		p, err = q.vers.Upgrade(m.Version, m)
	default:
		err = q.vers.NotUnderstood(m.Version)
	}
	// Field by field, every field of Job: a composite literal is built on
	// the stack and then copied to *j, which measured on every job's path.
	j.ID, j.Payload, j.Key, j.Version = m.ID, p, m.Key, m.Version
	j.NotBefore, j.StartBy, j.EnqueuedAt = m.NotBefore, m.StartBy, m.EnqueuedAt
	j.Attempt = m.Attempt
	j.Headers = nil
	if len(m.Headers) > 0 {
		j.Headers = maps.Clone(m.Headers) // the handler's own: a backend may keep m's
	}
	return err
}

// defaultCodec passes []byte and string through and uses JSON otherwise.
type defaultCodec[T any] struct{}

func (defaultCodec[T]) Marshal(v T) ([]byte, error) {
	switch p := any(v).(type) {
	case []byte:
		return append([]byte(nil), p...), nil
	case string:
		return []byte(p), nil
	}
	return json.Marshal(v)
}

func (defaultCodec[T]) Unmarshal(data []byte) (T, error) {
	var v T
	switch p := any(&v).(type) {
	case *[]byte:
		*p = append([]byte(nil), data...)
		return v, nil
	case *string:
		*p = string(data)
		return v, nil
	}
	err := json.Unmarshal(data, &v)
	return v, err
}
