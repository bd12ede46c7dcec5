package scope_test

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
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
	for _, opts := range [][]scope.Option{nil, {scope.Limit(2)}} {
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

func TestOnStuckReportsRunningTasks(t *testing.T) {
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
		}, scope.OnStuck(3*time.Second, func(running []string) {
			reportedAt = time.Since(start)
			reports = append(reports, running)
		}))
		errIs(t, err, errA)
		equal(t, [][]string{{"ignores-cancel", "#1"}}, reports, "one report, start order, names plain")
		equal(t, 4*time.Second, reportedAt, "cancelled at 1s, grace 3s")
		equal(t, 10*time.Second, time.Since(start), "Run still waits for stuck tasks")
	})
}

func TestOnStuckSilentWhenShutdownIsPrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		called := false
		err := scope.Run(t.Context(), func(s *scope.Scope) error {
			s.GoNamed("prompt", func(ctx context.Context) error { <-ctx.Done(); time.Sleep(time.Second); return nil })
			return nil
		}, scope.Timeout(time.Minute), scope.OnStuck(2*time.Second, func([]string) { called = true }))
		isTrue(t, !called, "reported although every task stopped within the grace period")
		noErr(t, err, "the timeout cut nothing short: no task echoed it, none was skipped")
	})
}
