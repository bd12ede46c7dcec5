package scope_test

import (
	"bytes"
	"context"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/corral-go/corral/scope"
)

func TestNamedTaskCarriesPprofLabel(t *testing.T) {
	var label string
	var profile bytes.Buffer
	err := scope.Run(t.Context(), func(s *scope.Scope) error {
		inside := make(chan struct{})
		release := make(chan struct{})
		s.GoNamed("indexer", func(ctx context.Context) error {
			label, _ = pprof.Label(ctx, "task")
			close(inside)
			<-release
			return nil
		})
		<-inside
		// The label is on the goroutine itself, so goroutine profiles show it.
		if err := pprof.Lookup("goroutine").WriteTo(&profile, 1); err != nil {
			return err
		}
		close(release)
		return nil
	})
	noErr(t, err)
	equal(t, "indexer", label)
	isTrue(t, strings.Contains(profile.String(), `labels: {"task":"indexer"}`), "goroutine profile lacks the label")
}

// waitFor blocks on ch; goroutine profiles find unnamed tasks by this frame.
func waitFor(ch <-chan struct{}) { <-ch }

// labelsOf returns the "# labels:" lines of the goroutine profile's records whose stack has fn.
func labelsOf(t *testing.T, fn string) []string {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, rec := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(rec, fn) {
			continue
		}
		l := "(none)"
		for _, line := range strings.Split(rec, "\n") {
			if strings.HasPrefix(line, "# labels: ") {
				l = strings.TrimPrefix(line, "# labels: ")
			}
		}
		labels = append(labels, l)
	}
	return labels
}

func TestUnnamedTaskCarriesTheScopeLabels(t *testing.T) {
	// A goroutine inherits the labels of the goroutine that starts it. A worker that a named
	// task created, or an unbounded task it started, carried task=parent after parent ended.
	for _, opts := range [][]scope.Option{nil, {scope.WithLimit(2)}} {
		ctx := pprof.WithLabels(t.Context(), pprof.Labels("req", "r1"))
		var got []string
		err := scope.Run(ctx, func(s *scope.Scope) error {
			release := make(chan struct{})
			started := make(chan struct{})
			s.GoNamed("parent", func(ctx context.Context) error {
				s.Go(func(ctx context.Context) error { close(started); waitFor(release); return nil })
				return nil
			})
			<-started
			// A second unnamed task, so that both workers of Limit(2) hold one.
			s.Go(func(ctx context.Context) error { waitFor(release); return nil })
			got = labelsOf(t, "scope_test.waitFor")
			close(release)
			return nil
		}, opts...)
		noErr(t, err)
		for _, l := range got {
			equal(t, `{"req":"r1"}`, l, "labels of an unnamed task (opts %d)", len(opts))
		}
		isTrue(t, len(got) >= 1, "no profile record of the waiting tasks")
	}
}

func TestStuckReportsRunningTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reports [][]string
		var reportedAt time.Duration
		start := time.Now()
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.GoNamed("ignores-cancel", func(ctx context.Context) error {
				time.Sleep(10 * time.Second) // does not watch ctx
				return nil
			})
			s.Go(func(ctx context.Context) error { time.Sleep(8 * time.Second); return nil })
			s.GoNamed("well-behaved", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
			s.GoNamed("fails", func(ctx context.Context) error {
				time.Sleep(time.Second)
				return errA
			})
			return nil
		}, scope.WithStuckReport(3*time.Second, func(_ context.Context, running []string) {
			reportedAt = time.Since(start)
			reports = append(reports, running)
		}))
		errIs(t, err, errA)
		equal(t, [][]string{{"ignores-cancel", "#1"}}, reports, "one report, start order, names plain")
		equal(t, 4*time.Second, reportedAt, "cancelled at 1s, grace 3s")
		equal(t, 10*time.Second, time.Since(start), "Run still waits for stuck tasks")
	})
}

func TestStuckReportSilentWhenShutdownIsPrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		called := false
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.GoNamed("prompt", func(ctx context.Context) error { <-ctx.Done(); time.Sleep(time.Second); return nil })
			return nil
		}, scope.WithTimeout(time.Minute), scope.WithStuckReport(2*time.Second, func(context.Context, []string) { called = true }))
		isTrue(t, !called, "reported although every task stopped within the grace period")
		noErr(t, err, "the timeout cut nothing short: no task echoed it, none was skipped")
	})
}

// stuckScope runs a scope whose task "slow" ignores its context for 10s while "fails" fails at
// 1s (a panic if taskPanics), with WithStuckReport(3s, report). It returns what Run panicked with,
// whether slow had returned by then, and the virtual time Run took.
func stuckScope(t *testing.T, taskPanics bool, report func(context.Context, []string)) (v any, slowDone bool, took time.Duration) {
	t.Helper()
	var done atomic.Bool
	start := time.Now()
	defer func() {
		v, slowDone, took = recover(), done.Load(), time.Since(start)
	}()
	_ = scope.Run(t.Context(), func(s *scope.Scope) error {
		s.GoNamed("slow", func(ctx context.Context) error {
			time.Sleep(10 * time.Second)
			done.Store(true)
			return nil
		})
		s.GoNamed("fails", func(ctx context.Context) error {
			time.Sleep(time.Second)
			if taskPanics {
				panic("task boom")
			}
			return errA
		})
		return nil
	}, scope.WithStuckReport(3*time.Second, report))
	t.Fatal("Run returned although the stuck report panicked")
	return
}

// A stuck report that panics does not break the join (issue 14, item 2): Run waits for every
// task, then panics with a *PanicError for the report (Index -1, Name "StuckReport") that carries
// the scope's failures.
func TestStuckReportPanicKeepsTheJoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, slowDone, took := stuckScope(t, false, func(context.Context, []string) { panic("report boom") })
		isTrue(t, slowDone, "Run unwound while a task still ran")
		equal(t, 10*time.Second, took)
		pe := outsidePanic(t, v, "StuckReport", "report boom", "TestStuckReportPanicKeepsTheJoin")
		errIs(t, pe, errA, "the task failure the panic carries")
	})
}

// When a task panicked too, the task's panic is re-raised, as always, and carries the report's.
func TestStuckReportPanicWithTaskPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, slowDone, took := stuckScope(t, true, func(context.Context, []string) { panic("report boom") })
		isTrue(t, slowDone, "Run unwound while a task still ran")
		equal(t, 10*time.Second, took)
		pe, ok := v.(*scope.PanicError)
		isTrue(t, ok, "Run panicked with %T %v", v, v)
		equal(t, "fails", pe.Name)
		equal(t, any("task boom"), pe.Value)
		var report *scope.PanicError
		for _, e := range pe.Unwrap() {
			if q, ok := e.(*scope.PanicError); ok && q.Name == "StuckReport" {
				report = q
			}
		}
		isTrue(t, report != nil, "the task's panic does not carry the report's: %v", pe)
		equal(t, any("report boom"), report.Value)
		equal(t, -1, report.Index)
	})
}

// A stuck report that calls runtime.Goexit (t.Fatal in a test) does not break the join either:
// Run waits for every task before the Goexit ends its goroutine.
func TestStuckReportGoexitKeepsTheJoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slowDone, returned bool
		var took time.Duration
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			start := time.Now()
			var done atomic.Bool
			defer func() { slowDone, took = done.Load(), time.Since(start) }()
			_ = scope.Run(context.Background(), func(s *scope.Scope) error {
				s.Go(func(ctx context.Context) error {
					time.Sleep(10 * time.Second)
					done.Store(true)
					return nil
				})
				return errA
			}, scope.WithStuckReport(3*time.Second, func(context.Context, []string) { runtime.Goexit() }))
			returned = true
		}()
		<-exited
		isTrue(t, !returned, "Run returned although its report called runtime.Goexit")
		isTrue(t, slowDone, "the goroutine that called Run exited while a task still ran")
		equal(t, 10*time.Second, took)
	})
}

// When the body panicked and the report panics too, Run still waits, then raises the report's
// panic carrying the body's: neither is lost.
func TestStuckReportPanicAfterBodyPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var done atomic.Bool
		v := mustPanic(t, func() {
			_ = scope.Run(t.Context(), func(s *scope.Scope) error {
				s.Go(func(ctx context.Context) error {
					time.Sleep(10 * time.Second)
					done.Store(true)
					return nil
				})
				panic("body boom")
			}, scope.WithStuckReport(3*time.Second, func(context.Context, []string) { panic("report boom") }))
		})
		isTrue(t, done.Load(), "Run unwound while a task still ran")
		pe := outsidePanic(t, v, "StuckReport", "report boom", "TestStuckReportPanicAfterBodyPanic")
		others := pe.Unwrap()
		equal(t, 1, len(others), "what the report's panic carries: %v", others)
		body, ok := others[0].(*scope.PanicError)
		isTrue(t, ok && body.Name == "body" && body.Value == "body boom", "the body's panic is not carried: %v", others)
	})
}

type runKey struct{}

// The stuck report gets the scope's context: it carries Run's values, and its cause says why
// the scope was cancelled.
func TestStuckReportGetsTheScopesContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got context.Context
		var running []string
		ctx := context.WithValue(t.Context(), runKey{}, "req-1")
		err := scope.Run(ctx, func(s *scope.Scope) error {
			s.GoNamed("stuck", func(ctx context.Context) error { time.Sleep(time.Minute); return nil })
			return nil
		}, scope.WithTimeout(time.Second), scope.WithStuckReport(2*time.Second, func(ctx context.Context, r []string) {
			got, running = ctx, r
		}))
		noErr(t, err)
		equal(t, []string{"stuck"}, running)
		equal(t, any("req-1"), got.Value(runKey{}), "Run's values")
		errIs(t, context.Cause(got), scope.ErrTimeout, "why the scope was cancelled")
	})
}
