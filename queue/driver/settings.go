package driver

import (
	"fmt"
	"slices"
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
