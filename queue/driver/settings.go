package driver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// SettingsError is the error of a backend whose process asks for a shared
// setting of a queue (one that every process of the queue must share, such
// as its capacity) other than the one the queue has, set by another
// process.
type SettingsError struct {
	Setting string // the setting's name, "capacity", "dedup horizon", ...
	Mine    string // this process's value
	Queue   string // the queue's value
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("%s %s differs from the queue's %s, set by another process", e.Setting, e.Mine, e.Queue)
}

// A Setting is one shared setting of a queue, as this process asks for it
// and as the queue has it, for [CompareSettings].
type Setting struct {
	Name        string
	Mine, Queue any // compared with ==, shown with fmt.Sprint
}

// CompareSettings returns a *SettingsError naming the first of settings
// whose two values differ, or nil if none does.
func CompareSettings(settings ...Setting) error {
	for _, s := range settings {
		if s.Mine != s.Queue {
			return &SettingsError{s.Name, fmt.Sprint(s.Mine), fmt.Sprint(s.Queue)}
		}
	}
	return nil
}

// Shared are the settings of a queue that every process of it must share,
// whatever its backend: a backend records them with the queue when the
// first process opens it and compares them at every later Open (and the
// lease at every CheckLease, see [SharedLease]), so that no process can
// weaken another's guarantee, say with a shorter dedup horizon.
type Shared struct {
	Capacity        int
	Overflow        string // the Overflow's String
	DedupHorizon    time.Duration
	DeadLetterLimit int
	Lease           time.Duration // zero until the first CheckLease
}

// SharedOf returns the shared settings of cfg (with its defaults), with no lease.
func SharedOf(cfg Config) Shared {
	cfg = cfg.WithDefaults()
	return Shared{Capacity: cfg.Capacity, Overflow: cfg.Overflow.String(),
		DedupHorizon: cfg.DedupHorizon, DeadLetterLimit: cfg.DeadLetterLimit}
}

// Diff returns a *SettingsError naming the first setting in which s (this
// process's) and q (the queue's) differ, then the first of more (a
// backend's own shared settings) that does, or nil. The lease is compared
// only when both have one.
func (s Shared) Diff(q Shared, more ...Setting) error {
	lease := Setting{Name: "lease"}
	if s.Lease != 0 && q.Lease != 0 {
		lease.Mine, lease.Queue = s.Lease, q.Lease
	}
	return CompareSettings(slices.Concat([]Setting{
		{"capacity", s.Capacity, q.Capacity},
		{"overflow", s.Overflow, q.Overflow},
		{"dedup horizon", s.DedupHorizon, q.DedupHorizon},
		{"dead-letter limit", s.DeadLetterLimit, q.DeadLetterLimit},
	}, more, []Setting{lease})...)
}

// ReconfigureHint ends the error of a backend whose process asks for a
// shared setting other than the queue's, when the backend has an option
// (WithReconfigure in this repository's backends) that replaces the queue's
// settings with the process's.
const ReconfigureHint = "WithReconfigure changes it, with every other process stopped"

// AgreeLease is the body of [SharedLease.CheckLease] for a backend that
// keeps its copy of the queue's shared settings, of its own type S, in *set,
// guarded by mu. It fails for a lease that is not positive (the message
// starts with backend, the backend's package name); else it passes the
// settings held to agree, which makes the queue's settings agree with them
// and this lease (or fails with a *SettingsError, say) and returns the
// settings in force, and holds what agree returns. mu is not held while
// agree runs, so agree may talk to the broker; two AgreeLease calls that
// race keep the settings of the one that returns last.
func AgreeLease[S any](ctx context.Context, backend string, lease time.Duration, mu *sync.Mutex, set *S,
	agree func(ctx context.Context, mine S) (S, error)) error {
	if lease <= 0 {
		return fmt.Errorf("%s: lease %v must be positive", backend, lease)
	}
	mu.Lock()
	mine := *set
	mu.Unlock()
	got, err := agree(ctx, mine)
	if err != nil {
		return err
	}
	mu.Lock()
	*set = got
	mu.Unlock()
	return nil
}
