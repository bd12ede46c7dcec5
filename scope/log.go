package scope

import (
	"log/slog"
)

// WithLogger logs the scope's failures to l as they happen, each with the context the tasks
// got (it carries the values of Run's ctx): a task that failed (returned an error, panicked
// or called runtime.Goexit) at slog.LevelError ("scope: task failed", with the attribute
// event, its *TaskError or *PanicError), as it ends and before the Joiner decides on it; and,
// with WithStuckReport, the tasks still running after the grace at slog.LevelWarn ("scope:
// tasks still running", with the attribute running, their names as the report gets them),
// just before the report is called. A task that merely returned its scope's cancellation is
// not a failure and is not logged. Run still returns every failure: the log says when each
// happened, while the scope runs. A nil l means no logging, as without the option.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) { o.logger = l })
}

// logFailure logs the failure of a task, if the scope has a logger.
func (s *Scope) logFailure(failure error) {
	if l := s.opts.logger; l != nil {
		l.LogAttrs(s.ctx, slog.LevelError, "scope: task failed", slog.Any("event", failure))
	}
}

// logStuck logs the names of the tasks still running after the stuck grace, if the scope has
// a logger.
func (s *Scope) logStuck(running []string) {
	if l := s.opts.logger; l != nil {
		l.LogAttrs(s.ctx, slog.LevelWarn, "scope: tasks still running", slog.Any("running", running))
	}
}
