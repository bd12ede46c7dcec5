package driver_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// CompareSettings names the first setting that differs, with both values.
func TestCompareSettings(t *testing.T) {
	err := driver.CompareSettings(
		driver.Setting{Name: "capacity", Mine: 10, Queue: 10},
		driver.Setting{Name: "dedup horizon", Mine: time.Hour, Queue: 2 * time.Hour},
		driver.Setting{Name: "overflow", Mine: "block", Queue: "reject"},
	)
	var se *driver.SettingsError
	if !errors.As(err, &se) || *se != (driver.SettingsError{Setting: "dedup horizon", Mine: "1h0m0s", Queue: "2h0m0s"}) ||
		err.Error() != "dedup horizon 1h0m0s differs from the queue's 2h0m0s, set by another process" {
		t.Errorf("CompareSettings = %v, want the dedup horizon's SettingsError", err)
	}
	if err := driver.CompareSettings(driver.Setting{Name: "capacity", Mine: 1, Queue: 1}); err != nil {
		t.Errorf("CompareSettings of equal settings = %v, want nil", err)
	}
}

// Shared.Diff compares the common settings, then the backend's own, then
// the lease, which counts only when both processes have one.
func TestSharedDiff(t *testing.T) {
	mine := driver.SharedOf(driver.Config{Capacity: 10})
	if mine.Capacity != 10 || mine.Overflow != (driver.Config{}).WithDefaults().Overflow.String() || mine.Lease != 0 {
		t.Fatalf("SharedOf = %+v", mine)
	}
	queue := mine
	queue.Lease = time.Minute
	replicas := driver.Setting{Name: "replicas", Mine: 1, Queue: 3}
	for _, tc := range []struct {
		name        string
		mine, queue driver.Shared
		more        []driver.Setting
		want        string
	}{
		{"no lease of mine", mine, queue, nil, ""},
		{"another lease", driver.Shared{Capacity: 10, Overflow: mine.Overflow, DedupHorizon: mine.DedupHorizon, DeadLetterLimit: mine.DeadLetterLimit, Lease: time.Second}, queue, nil,
			"lease 1s differs from the queue's 1m0s, set by another process"},
		{"the backend's own before the lease", driver.Shared{Capacity: 10, Overflow: mine.Overflow, DedupHorizon: mine.DedupHorizon, DeadLetterLimit: mine.DeadLetterLimit, Lease: time.Second}, queue, []driver.Setting{replicas},
			"replicas 1 differs from the queue's 3, set by another process"},
		{"common before the backend's own", driver.Shared{Capacity: 20}, queue, []driver.Setting{replicas},
			"capacity 20 differs from the queue's 10, set by another process"},
	} {
		err := tc.mine.Diff(tc.queue, tc.more...)
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
			t.Errorf("%s: Diff = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// AgreeLease refuses a lease that is not positive without calling agree,
// passes agree the settings held, holds what it returns, and keeps the
// settings held when agree fails.
func TestAgreeLease(t *testing.T) {
	var mu sync.Mutex
	set := driver.Shared{Capacity: 10}
	calls := 0
	agree := func(ctx context.Context, mine driver.Shared) (driver.Shared, error) {
		calls++
		if mine != (driver.Shared{Capacity: 10, Lease: time.Duration(calls-1) * time.Minute}) {
			t.Errorf("agree got %+v", mine)
		}
		if calls == 3 {
			return mine, errors.New("refused")
		}
		mine.Lease = time.Duration(calls) * time.Minute
		return mine, nil
	}
	ctx := context.Background()
	if err := driver.AgreeLease(ctx, "test", 0, &mu, &set, agree); err == nil || err.Error() != "test: lease 0s must be positive" || calls != 0 {
		t.Fatalf("AgreeLease(0) = %v after %d agree calls, want the lease's error and none", err, calls)
	}
	for want := 1; want <= 2; want++ {
		if err := driver.AgreeLease(ctx, "test", time.Second, &mu, &set, agree); err != nil || set.Lease != time.Duration(want)*time.Minute {
			t.Fatalf("AgreeLease = %v, holding %+v; want nil and the lease agree returned", err, set)
		}
	}
	if err := driver.AgreeLease(ctx, "test", time.Second, &mu, &set, agree); err == nil || err.Error() != "refused" || set.Lease != 2*time.Minute {
		t.Fatalf("AgreeLease = %v, holding %+v; want agree's error and the settings held before", err, set)
	}
}
