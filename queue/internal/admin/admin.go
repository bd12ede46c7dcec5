// Package admin is the mechanism behind the operator's verbs of package
// queue, over a backend's driver.Admin: a page's cursor as text, a
// filter's page size and age, and the batches of a bulk verb.
package admin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/corral-go/corral/queue/driver"
)

// DefaultPage is the page size of a filter with no Limit.
const DefaultPage = 100

// Prepare completes f, whose selection the caller set, for a listing at
// now: the default page size if f.Limit is zero, EnqueuedBefore from
// olderThan (if positive), After from cursor (if not ""). It refuses a
// page size List does not take and a malformed cursor.
func Prepare(f *driver.Filter, olderThan time.Duration, cursor string, now time.Time) error {
	if f.Limit == 0 {
		f.Limit = DefaultPage
	}
	if err := f.CheckPage(); err != nil {
		return err
	}
	if olderThan > 0 {
		f.EnqueuedBefore = now.Add(-olderThan)
	}
	if cursor != "" {
		c, err := DecodeCursor(cursor)
		if err != nil {
			return err
		}
		f.After = c
	}
	return nil
}

// Bulk applies verb to every job f selects on a, page by page, and counts
// those it applied to; observe (if not nil) is told of every List's
// outcome. Only the jobs enqueued up to the call are looked at, so that it
// ends while producers run. A job that verb finds settled, redriven or
// purged meanwhile, or whose ID is taken (ErrNotFound, ErrNoJob,
// ErrDuplicate), is skipped; any other error ends it.
func Bulk(ctx context.Context, a driver.Admin, f driver.Filter, verb func(context.Context, string) error, observe func(context.Context, error)) (int, error) {
	// A second of slack for a backend's reading of the clock.
	if end := time.Now().Add(time.Second); f.EnqueuedBefore.IsZero() || f.EnqueuedBefore.After(end) {
		f.EnqueuedBefore = end
	}
	n := 0
	for {
		infos, err := a.List(ctx, f)
		if observe != nil {
			observe(ctx, err)
		}
		if err != nil {
			return n, err
		}
		for i := range infos {
			switch err := verb(ctx, infos[i].ID); {
			case err == nil:
				n++
			case errors.Is(err, driver.ErrNotFound), errors.Is(err, driver.ErrNoJob), errors.Is(err, driver.ErrDuplicate):
			default:
				return n, err
			}
		}
		if len(infos) < f.Limit {
			return n, nil
		}
		f.After = infos[len(infos)-1].Cursor()
	}
}

// CheckBulk checks f, the filter of a bulk verb on the jobs in state (as
// the user named it), and completes it: dead says the verb takes dead
// letters (redrive, purge), which f selects if it names no state; else
// the verb takes stored jobs (cancel).
func CheckBulk(f *driver.Filter, state driver.JobState, dead bool) error {
	switch {
	case dead && state == "":
		f.State = driver.StateDead
	case dead != (state == driver.StateDead):
		return fmt.Errorf("queue: a bulk verb on state %q: redrive and purge take dead letters, cancel stored jobs", state)
	}
	return nil
}

// EncodeCursor returns c as text: its enqueue time in Unix nanoseconds and
// its ID, joined by a dot and encoded in URL-safe base64, so that it goes
// into a URL as it is.
func EncodeCursor(c driver.Cursor) string {
	s := strconv.FormatInt(c.EnqueuedAt.UnixNano(), 10) + "." + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

var errCursor = errors.New("queue: malformed cursor (pass a Page's Next)")

// DecodeCursor returns the cursor that EncodeCursor gave s for.
func DecodeCursor(s string) (driver.Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return driver.Cursor{}, errCursor
	}
	ns, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil {
		return driver.Cursor{}, errCursor
	}
	return driver.Cursor{EnqueuedAt: time.Unix(0, n), ID: id}, nil
}
