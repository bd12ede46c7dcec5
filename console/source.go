package console

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/corral-go/corral/queue"
)

// Source is one queue as the console sees it: its name and the operator's verbs, without its
// payload type. Make one with [Of].
type Source struct {
	name string
	q    verbs
}

// verbs is what the console calls on a queue; *queue.Queue[T] has every method but Jobs and
// Inspect, which typed adapts.
type verbs interface {
	Stats(ctx context.Context) (queue.Stats, error)
	Count(ctx context.Context, f queue.Filter) (int, error)
	Cancel(ctx context.Context, id string) error
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Redrive(ctx context.Context, id string) error
	Purge(ctx context.Context, id string) error
	RedriveAll(ctx context.Context, f queue.Filter) (int, error)
	PurgeAll(ctx context.Context, f queue.Filter) (int, error)
	CancelAll(ctx context.Context, f queue.Filter) (int, error)
	jobs(ctx context.Context, f queue.Filter) (page, error)
	inspect(ctx context.Context, id string) (job, error)
}

// Of returns the Source of q, shown under name (which must be unique among a console's
// queues, and non-empty). Payloads are shown as JSON.
func Of[T any](name string, q *queue.Queue[T]) Source {
	if name == "" || q == nil {
		panic("console: Of needs a name and a queue")
	}
	return Source{name: name, q: typed[T]{q}}
}

// typed adapts a *queue.Queue[T] to verbs.
type typed[T any] struct{ *queue.Queue[T] }

// job is a JobInfo with its payload rendered.
type job struct {
	queue.JobInfo[struct{}]
	Payload string
}

type page struct {
	Jobs []job
	Next string
}

func (t typed[T]) jobs(ctx context.Context, f queue.Filter) (page, error) {
	p, err := t.Jobs(ctx, f)
	if err != nil {
		return page{}, err
	}
	out := page{Next: p.Next, Jobs: make([]job, len(p.Jobs))}
	for i := range p.Jobs {
		out.Jobs[i] = render(&p.Jobs[i])
	}
	return out, nil
}

func (t typed[T]) inspect(ctx context.Context, id string) (job, error) {
	ji, err := t.Inspect(ctx, id)
	if err != nil {
		return job{}, err
	}
	return render(&ji), nil
}

// render drops the payload's type: the rest of ji is kept, the payload becomes JSON text.
func render[T any](ji *queue.JobInfo[T]) job {
	j := job{JobInfo: queue.JobInfo[struct{}]{Err: ji.Err, Size: ji.Size, JobStatus: ji.JobStatus}}
	jb := ji.Job
	j.Job = queue.Job[struct{}]{ID: jb.ID, Key: jb.Key, Version: jb.Version, NotBefore: jb.NotBefore, StartBy: jb.StartBy,
		Attempt: jb.Attempt, EnqueuedAt: jb.EnqueuedAt}
	if b, err := json.MarshalIndent(jb.Payload, "", "  "); err == nil {
		j.Payload = string(b)
	} else {
		j.Payload = fmt.Sprintf("%+v", jb.Payload)
	}
	return j
}
