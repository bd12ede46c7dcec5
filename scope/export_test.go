package scope

// WithPublished returns an Option that calls f right after a task's end has been published:
// its Handle resolved and the join no longer counts it. In a bounded scope, f runs on the
// worker, before it takes its next task, so f can hold the worker at that point.
func WithPublished(f func()) Option { return optionFunc(func(o *options) { o.published = f }) }
