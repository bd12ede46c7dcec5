package pool

import (
	"log/slog"
	"runtime/pprof"

	"github.com/corral-go/corral/internal/hooks"
)

// WithName names the pool: its workers carry the pprof label pool=name while they run tasks
// (so a CPU or goroutine profile groups them by pool), and WithLogger's records carry the
// attribute pool=name. A pool's tasks are told apart only by pool, never by task, so that the
// labels stay few. A task run in its submitter's goroutine (CallerRuns, Group.Wait helping)
// runs on a helper goroutine that carries the label too. Without a name, workers carry the
// labels of the goroutine that started them. It panics if name is empty.
func WithName(name string) Option {
	if name == "" {
		panic("pool: WithName(\"\"): empty name")
	}
	return optionFunc(func(o *options) { o.name = name })
}

// WithLogger logs the pool's events to l: a dropped task at slog.LevelWarn ("pool: task
// dropped") and a task submitted with Submit that failed at slog.LevelError ("pool: task
// failed"), each with the attribute event (a DropEvent or ErrorEvent group) and, if the pool
// is named (WithName), pool. The records are logged with the context the task was submitted
// with, from the goroutine that would call the hook (see Hooks); they are logged before the
// Hooks set by WithHooks are called, which still are. A level that l does not enable (asked
// once, by New, with a background context) costs nothing. Logging does not time tasks: an
// ErrorEvent's duration is logged only when the pool is timed (WithTimings, or an OnError
// hook). A nil l means no logging, as without the option.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) { o.logger = l })
}

// logHooks returns the hooks that log to o.logger, chained before o.hooks.
func (o *options) logHooks() Hooks {
	l := hooks.Named(o.logger, "pool", o.name)
	if l == nil {
		return o.hooks
	}
	return Hooks{
		OnDrop:  hooks.Chain(hooks.Log[DropEvent](l, slog.LevelWarn, "pool: task dropped"), o.hooks.OnDrop),
		OnError: hooks.Chain(hooks.Log[ErrorEvent](l, slog.LevelError, "pool: task failed"), o.hooks.OnError),
	}
}

// labelled gives the calling goroutine the pool's pprof labels, if it is named. Called as a
// goroutine that runs the pool's tasks starts: labels are set once per goroutine, not per task.
func (p *Pool) labelled() {
	if p.labels != nil {
		pprof.SetGoroutineLabels(p.labels)
	}
}
