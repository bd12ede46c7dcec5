package queue

import (
	"fmt"
	"strconv"
	"time"

	"github.com/corral-go/corral/queue/driver"
	"github.com/corral-go/corral/queue/internal/version"
)

// Payload versions: a job records the version of its payload's schema
// ([WithVersion]) when it is enqueued, and a consumer handles only the
// versions it understands, its own and those it can upgrade from
// ([WithUpgrade]). A job of any other version (newer, during a rolling
// deploy; older, with no upgrade) is handed back for another consumer,
// without spending an attempt, for at most the version wait
// ([WithVersionWait]); then it is dead-lettered with [ReasonVersion].

// DefaultVersionWait is how long a job whose payload version a consumer
// does not understand waits for one that does, unless [WithVersionWait]
// says otherwise: long enough for a rolling deploy.
const DefaultVersionWait = time.Hour

// WithVersion sets the version of the schema of the queue's payload type T:
// Enqueue records it with every job ([Job.Version]), and the queue's
// consumers handle jobs of version v, and of the older versions declared
// with [WithUpgrade]. The default is 0, the version of every job enqueued by
// a queue that declares none.
//
// A consumer does not run its handler on a job of a version it does not
// understand (a newer one, enqueued by a producer already deployed at the
// next version, or an older one without an upgrade): it hands the job back
// to the backend, without spending an attempt, so that a consumer that
// understands it takes it. If none does within the version wait
// ([WithVersionWait]), the job is dead-lettered with [ReasonVersion]; redrive
// it once such a consumer runs. [Stats.AwaitingVersion] counts the jobs
// waiting so. A payload that fails to decode at a version the consumer
// understands is dead-lettered at once with [ReasonDecode].
//
// The in-memory backend passes payload values within one queue, whose
// version is the queue's: versions matter across processes, with a backend
// they share. It panics if v is negative.
func WithVersion(v int) Option {
	if v < 0 {
		panic("queue: WithVersion(" + strconv.Itoa(v) + "): negative version")
	}
	return optionFunc(func(o *options) { o.version = v })
}

// WithUpgrade declares that the queue's consumers understand payloads of
// the older version from: such a payload is decoded as an Old by the
// default codec (JSON; []byte and string pass through, so with a codec of
// your own take Old = []byte and decode it in f), then turned into the
// queue's payload type by f, before the handler gets it. An error from f,
// a panic in it, or a payload that does not decode dead-letters the job
// with [ReasonDecode]. f must be safe for concurrent use.
//
// It panics if from is negative or f is nil; New panics if from is not
// older than the queue's [WithVersion], if two upgrades start from the same
// version, or if T is not the queue's payload type.
func WithUpgrade[Old, T any](from int, f func(Old) (T, error)) Option {
	switch {
	case from < 0:
		panic("queue: WithUpgrade(" + strconv.Itoa(from) + "): negative version")
	case f == nil:
		panic("queue: WithUpgrade(" + strconv.Itoa(from) + ", nil): nil upgrade")
	}
	u := version.Upgrade{From: from, Desc: fmt.Sprintf("func(%T) (%T, error)", *new(Old), *new(T)),
		F: func(m *driver.Message) (T, error) {
			if old, ok := m.Value.(Old); ok { // from a backend that keeps values
				return f(old)
			}
			old, err := defaultCodec[Old]{}.Unmarshal(m.Body)
			if err != nil {
				var zero T
				return zero, fmt.Errorf("queue: decode payload of version %d: %w", from, err)
			}
			return f(old)
		}}
	return optionFunc(func(o *options) { o.upgrades = append(o.upgrades, u) })
}

// WithVersionWait sets how long a job whose payload version a consumer of
// the queue does not understand waits for one that does, from the first
// time a consumer of this process handed it back, before that consumer
// dead-letters it with [ReasonVersion]. Meanwhile the job comes back to the
// consumer every quarter of the time it has waited (at least 10ms apart,
// at most a minute). The default is [DefaultVersionWait]. It panics if d is
// not positive.
func WithVersionWait(d time.Duration) Option {
	if d <= 0 {
		panic("queue: WithVersionWait(" + d.String() + "): need a positive wait")
	}
	return optionFunc(func(o *options) { o.versionWait = d })
}
